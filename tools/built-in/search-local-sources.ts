import { z } from 'zod';
import type { Corpus } from '../search/corpus';
import { defineTool, type ToolDefinition } from '../define-tool';
import type { DocumentSection } from '../search/document-text';
import type { SearchHit } from '../search/search-index';
import { ToolOutcome } from '../tool-outcome';
import { countRegexMatches, type MatchCount, type MatchTarget } from './regex-search-worker';

/** A regular expression search reads at most this many characters of documents, in path order. */
export const REGEX_SCAN_MAX_CHARS = 16 * 1024 * 1024;
/** …and at most this many documents. */
export const REGEX_SCAN_MAX_DOCUMENTS = 5_000;

/** The tool's output bound: an answer is fitted to it as JSON, so that the boundary never truncates it. */
const MAX_OUTPUT_CHARS = 4_000;

/** The arguments of `search_local_sources`; an invalid regular expression fails validation, so it never executes. */
export const searchLocalSourcesInput = z
  .strictObject({
    query: z.string().min(1).max(500).describe('Words to look for, or a regular expression when mode is "regex".'),
    mode: z
      .enum(['words', 'regex'])
      .default('words')
      .describe(
        '"words": sections matching any of the words, best first (BM25, word forms folded: "deleting" finds "delete"); ' +
          '"regex": a case-insensitive regular expression over a bounded part of the corpus.',
      ),
    limit: z.number().int().min(1).max(20).default(5).describe('The most documents (or, within one document, sections) to return.'),
    folder: z.string().min(1).max(300).optional().describe('Only documents under this folder of the knowledge base, e.g. "policies".'),
    document: z.string().min(1).max(300).optional().describe('Only this document (an id): the hits are then its best sections.'),
  })
  .superRefine((args, context) => {
    if (args.mode !== 'regex') return;
    try {
      new RegExp(args.query, 'i');
    } catch (error) {
      context.addIssue({ code: 'custom', path: ['query'], message: `not a valid regular expression: ${(error as Error).message}` });
    }
  });

/** One search hit: enough for the model to choose what to read, and which section of it. */
export type SearchMatch = SearchHit;

/** What a search answers: the hits, and how much of the corpus a regular expression could not scan. */
export interface SearchAnswer {
  matches: SearchMatch[];
  /** Regex mode only, when the scan stopped at its bound: the documents it read and those there are. */
  scanned?: { documents: number; of: number };
}

/** About 160 characters of `content` around `index`, on one line, with an ellipsis where it was cut. */
export function snippetAround(content: string, index: number): string {
  const start = Math.max(0, index - 60);
  const text = content
    .slice(start, start + 160)
    .replace(/\s+/g, ' ')
    .trim();
  return `${start > 0 ? '…' : ''}${text}${start + 160 < content.length ? '…' : ''}`;
}

/** Counts the matches of a pattern on this thread: only for patterns built here, which run in linear time. */
export function countMatches(pattern: RegExp, { title, content }: MatchTarget): MatchCount {
  const global = new RegExp(pattern.source, 'gi');
  const inContent = [...content.matchAll(global)];
  return { inTitle: title.match(global)?.length ?? 0, inContent: inContent.length, firstIndex: inContent[0]?.index ?? -1 };
}

function sectionAt(sections: DocumentSection[], index: number): DocumentSection | undefined {
  return sections.find((section) => index >= section.start && index < section.end) ?? sections[0];
}

/**
 * A regular expression over the documents in scope, as many as the scan's bounds allow, on a
 * worker thread that `signal` terminates; ranked by matches (a title match counts three).
 */
async function searchRegex(corpus: Corpus, args: z.output<typeof searchLocalSourcesInput>, signal: AbortSignal): Promise<SearchAnswer> {
  const index = corpus.index();
  const listed = index.list({ folder: args.folder, document: args.document });
  const documents = [];
  let chars = 0;
  for (const entry of listed) {
    if (documents.length >= REGEX_SCAN_MAX_DOCUMENTS || (documents.length > 0 && chars + entry.size > REGEX_SCAN_MAX_CHARS)) break;
    const document = index.document(entry.id);
    if (!document) continue;
    documents.push(document);
    chars += entry.size;
  }
  const counts = await countRegexMatches(
    args.query,
    documents.map(({ title, text }) => ({ title, content: text })),
    signal,
  );
  const matches = documents
    .map((document, position) => ({ document, count: counts[position], score: counts[position].inTitle * 3 + counts[position].inContent }))
    .filter(({ score }) => score > 0)
    .sort((left, right) => right.score - left.score || left.document.id.localeCompare(right.document.id))
    .slice(0, args.limit)
    .map(({ document, count, score }): SearchMatch => {
      const section = sectionAt(document.sections, Math.max(0, count.firstIndex));
      return {
        id: document.id,
        title: document.title,
        section: section?.heading ?? document.title,
        sectionIndex: section?.index ?? 0,
        score,
        snippet: snippetAround(document.text, Math.max(0, count.firstIndex)),
      };
    });
  return documents.length < listed.length ? { matches, scanned: { documents: documents.length, of: listed.length } } : { matches };
}

/**
 * Searches the corpus for words (the full-text index) or a regular expression (a bounded scan);
 * no match is a success with an empty list. A regular expression still running when `signal`
 * aborts is stopped, and the search rejects with the signal's reason.
 */
export async function searchCorpus(
  corpus: Corpus,
  args: z.output<typeof searchLocalSourcesInput>,
  signal: AbortSignal,
): Promise<SearchMatch[]> {
  return (await searchAnswer(corpus, args, signal)).matches;
}

/** The whole answer of a search, with the scan's extent in regex mode. */
export async function searchAnswer(
  corpus: Corpus,
  args: z.output<typeof searchLocalSourcesInput>,
  signal: AbortSignal,
): Promise<SearchAnswer> {
  if (signal.aborted) throw signal.reason;
  if (args.mode === 'regex') return searchRegex(corpus, args, signal);
  const matches = corpus.index().search(args.query, { limit: args.limit, folder: args.folder, document: args.document });
  return { matches };
}

/**
 * An answer that fits `maxChars` as JSON: snippets shortened first (to 80 characters), then the
 * last hits left out, counted in `more`.
 */
export function fitAnswer<Answer extends SearchAnswer>(answer: Answer, maxChars: number): Answer & { more?: number } {
  const size = (candidate: unknown) => JSON.stringify(candidate).length;
  if (size(answer) <= maxChars) return answer;
  const short = {
    ...answer,
    matches: answer.matches.map((match) => (match.snippet.length > 80 ? { ...match, snippet: `${match.snippet.slice(0, 79)}…` } : match)),
  };
  for (let kept = short.matches.length; kept > 0; kept--) {
    const fitted =
      kept === short.matches.length ? short : { ...short, matches: short.matches.slice(0, kept), more: short.matches.length - kept };
    if (size(fitted) <= maxChars) return fitted;
  }
  return { ...short, matches: [], more: short.matches.length };
}

/** The `search_local_sources` read tool over a corpus folder; files the index skips are counted in the answer. */
export function searchLocalSourcesTool(corpus: Corpus): ToolDefinition {
  return defineTool({
    name: 'search_local_sources',
    description:
      'Search the local knowledge base (Markdown, text and HTML documents). Returns the best sections: document id, title, ' +
      'section heading and index, and a snippet around the best match; read a document or one section with get_document.',
    input: searchLocalSourcesInput,
    effect: 'read',
    timeout: '10s',
    maxAttempts: 3,
    maxOutputChars: MAX_OUTPUT_CHARS,
    handler: async (args, { signal }) => {
      const answer = await searchAnswer(corpus, args, signal);
      const skipped = corpus.skippedFiles();
      return ToolOutcome.ok(fitAnswer(skipped > 0 ? { ...answer, skippedFiles: skipped } : answer, MAX_OUTPUT_CHARS));
    },
  });
}
