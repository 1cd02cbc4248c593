import { z } from 'zod';
import type { Corpus } from '../search/corpus';
import { defineTool, type ToolDefinition } from '../define-tool';
import type { DocumentSection } from '../search/document-text';
import type { IndexedDocument } from '../search/search-index';
import { ToolOutcome } from '../tool-outcome';

/** The most characters of text one answer carries; the rest is read with `start` (the answer's `nextStart`). */
export const MAX_DOCUMENT_CHARS = 6_000;
/** The most sections an answer lists; the answer says how many it left out. */
const MAX_LISTED_SECTIONS = 40;
/** The tool's output bound: an answer is cut to fit it as JSON, so that the boundary never truncates it. */
const MAX_OUTPUT_CHARS = 8_000;

/** The arguments of `get_document`: a whole document, one section of it, or a range of characters. */
export const getDocumentInput = z.strictObject({
  id: z.string().min(1).max(300).describe('The id of a document, as returned by search_local_sources.'),
  section: z
    .union([z.number().int().min(0), z.string().min(1).max(300)])
    .optional()
    .describe('One section only: its index (sectionIndex from search_local_sources) or its heading.'),
  start: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('The first character to return, counted from the start of the document (or of the section); for reading in parts.'),
  length: z
    .number()
    .int()
    .min(1)
    .max(MAX_DOCUMENT_CHARS)
    .optional()
    .describe(`How many characters to return (at most ${MAX_DOCUMENT_CHARS}, the default).`),
});

function closeIds(wanted: string, ids: string[]): string[] {
  const parts = wanted
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return ids.filter((id) => parts.some((part) => id.includes(part))).slice(0, 5);
}

function refuse(message: string): ToolOutcome {
  return ToolOutcome.error(message, { code: 'tool_failure', retryable: false });
}

/** The section a `section` argument names: by index, else by heading (exact, then the first that contains it), ignoring case. */
function findSection(document: IndexedDocument, wanted: number | string): DocumentSection | string {
  const { sections } = document;
  if (typeof wanted === 'number') {
    return sections[wanted] ?? `section: document "${document.id}" has sections 0 to ${sections.length - 1}, not ${wanted}`;
  }
  const lower = wanted.trim().toLowerCase();
  const found =
    sections.find((section) => section.heading.toLowerCase() === lower) ??
    sections.find((section) => section.heading.toLowerCase().includes(lower));
  if (found) return found;
  const headings = sections
    .slice(0, 10)
    .map((section) => `${section.index}: ${section.heading}`)
    .join('; ');
  return `section: document "${document.id}" has no section headed "${wanted}"; its sections include ${headings}`;
}

/** What `get_document` answers: the text asked for, where it lies, the document's size and its sections. */
function documentAnswer(document: IndexedDocument, args: z.output<typeof getDocumentInput>): ToolOutcome | Record<string, unknown> {
  let from = 0;
  let to = document.text.length;
  let section: DocumentSection | undefined;
  if (args.section !== undefined) {
    const found = findSection(document, args.section);
    if (typeof found === 'string') return refuse(found);
    section = found;
    from = found.start;
    to = found.end;
  }
  const start = from + (args.start ?? 0);
  if (start > to)
    return refuse(`start: ${args.start} is past the end of the ${section ? 'section' : 'document'} (${to - from} characters)`);
  const listed = document.sections.slice(0, MAX_LISTED_SECTIONS).map(({ index, heading, start: at, end: until }) => ({
    index,
    heading: heading.length > 80 ? `${heading.slice(0, 79)}…` : heading,
    chars: until - at,
  }));
  const answerFor = (end: number) => ({
    id: document.id,
    title: document.title,
    format: document.format,
    size: document.text.length,
    ...(section ? { section: { index: section.index, heading: section.heading, chars: section.end - section.start } } : {}),
    start: start - from,
    end: end - from,
    content: document.text.slice(start, end),
    ...(end < to ? { nextStart: end - from } : {}),
    sections: listed,
    ...(document.sections.length > listed.length ? { moreSections: document.sections.length - listed.length } : {}),
  });
  // Shorter text until the whole answer, as JSON (escapes included), fits the output bound.
  let end = Math.min(to, start + (args.length ?? MAX_DOCUMENT_CHARS));
  let answer = answerFor(end);
  for (let over = JSON.stringify(answer).length - MAX_OUTPUT_CHARS; over > 0 && end > start;) {
    end = Math.max(start, end - over);
    answer = answerFor(end);
    over = JSON.stringify(answer).length - MAX_OUTPUT_CHARS;
  }
  return answer;
}

/**
 * The `get_document` read tool: a whole document by id, one of its sections, or a range of
 * characters, within the output bound (a longer text is read in parts with `start`); an unknown
 * id is an error that says what exists, and the id of a file the corpus refused to read (a link,
 * a special file, too large) is `forbidden` with the reason, never the file's content.
 */
export function getDocumentTool(corpus: Corpus): ToolDefinition {
  return defineTool({
    name: 'get_document',
    description:
      'Read one document of the local knowledge base by its id (from search_local_sources): whole, one section (by index or ' +
      `heading) or a range of characters. At most ${MAX_DOCUMENT_CHARS} characters per call; "nextStart" says where to go on.`,
    input: getDocumentInput,
    effect: 'read',
    timeout: '10s',
    maxAttempts: 3,
    maxOutputChars: MAX_OUTPUT_CHARS,
    handler: (args) => {
      const index = corpus.index();
      const document = index.document(args.id);
      if (document) {
        const answer = documentAnswer(document, args);
        return ToolOutcome.is(answer) ? answer : ToolOutcome.ok(answer);
      }
      // A file the corpus refused (a link, a special file, too large) gets a stable code and its reason, never its content.
      const refused = corpus.refusalOf(args.id);
      if (refused) {
        return ToolOutcome.error(`${refused.path} is not served: ${refused.detail}`, { code: 'forbidden', retryable: false });
      }
      const similar = closeIds(
        args.id,
        index.list().map((candidate) => candidate.id),
      );
      const hint = similar.length > 0 ? `similar ids: ${similar.join(', ')}` : 'call search_local_sources to find ids';
      return refuse(`no document with id "${args.id}"; ${hint}`);
    },
  });
}
