import { z } from 'zod';
import type { Corpus, CorpusDocument } from '../corpus';
import { defineTool, type ToolDefinition } from '../define-tool';
import { ToolOutcome } from '../tool-outcome';
import { countRegexMatches, type MatchCount, type MatchTarget } from './regex-search-worker';

const STOP_WORDS = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'by',
  'do',
  'for',
  'from',
  'how',
  'i',
  'in',
  'is',
  'it',
  'of',
  'on',
  'or',
  'our',
  'the',
  'to',
  'we',
  'what',
  'when',
  'which',
  'who',
  'with',
  'you',
]);

/** The arguments of `search_local_sources`; an invalid regular expression fails validation, so it never executes. */
export const searchLocalSourcesInput = z
  .strictObject({
    query: z.string().min(1).max(500).describe('Words to look for, or a regular expression when mode is "regex".'),
    mode: z
      .enum(['words', 'regex'])
      .default('words')
      .describe('"words": documents matching any of the words, best first; "regex": a case-insensitive regular expression.'),
    limit: z.number().int().min(1).max(20).default(5).describe('The most documents to return.'),
  })
  .superRefine((args, context) => {
    if (args.mode !== 'regex') return;
    try {
      new RegExp(args.query, 'i');
    } catch (error) {
      context.addIssue({ code: 'custom', path: ['query'], message: `not a valid regular expression: ${(error as Error).message}` });
    }
  });

/** One search hit: enough for the model to choose what to read. */
export interface SearchMatch {
  id: string;
  title: string;
  score: number;
  snippet: string;
}

/** The meaningful words of a query, lower-cased, without stop words. */
export function queryWords(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'-]*/gu) ?? [];
  return [...new Set(words.filter((word) => word.length > 1 && !STOP_WORDS.has(word)))];
}

/** A word cut to a stem that also begins its other forms: `releases` → `releas`, `allowed` → `allow`. */
export function wordStem(word: string): string {
  return word.length > 4 ? word.replace(/(ing|ed|es|s)$/, '') : word;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function snippetAround(content: string, index: number): string {
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

function scoreCounts(counts: MatchCount[]): { score: number; firstIndex: number } {
  let score = 0;
  let firstIndex = -1;
  for (const { inTitle, inContent, firstIndex: index } of counts) {
    score += inTitle * 3 + inContent;
    if (index !== -1 && (firstIndex === -1 || index < firstIndex)) firstIndex = index;
  }
  return { score, firstIndex };
}

/**
 * The counts of every document, one list per document: the words' patterns are matched here, a
 * regular expression from the model on a worker thread that `signal` terminates.
 */
async function countDocuments(
  documents: CorpusDocument[],
  query: string,
  mode: 'words' | 'regex',
  signal: AbortSignal,
): Promise<MatchCount[][]> {
  if (mode === 'regex') return (await countRegexMatches(query, documents, signal)).map((count) => [count]);
  const patterns = queryWords(query).map((word) => new RegExp(`\\b${escapeRegExp(wordStem(word))}`, 'i'));
  if (patterns.length === 0) return documents.map(() => []);
  return documents.map((document) => patterns.map((pattern) => countMatches(pattern, document)));
}

/**
 * Searches the corpus for words or a regular expression; no match is a success with an empty list.
 * A regular expression still running when `signal` aborts is stopped, and the search rejects with the signal's reason.
 */
export async function searchCorpus(
  corpus: Corpus,
  { query, mode, limit }: z.output<typeof searchLocalSourcesInput>,
  signal: AbortSignal,
): Promise<SearchMatch[]> {
  const documents = corpus.documents();
  const counts = await countDocuments(documents, query, mode, signal);
  return documents
    .map((document, index) => ({ document, ...scoreCounts(counts[index]) }))
    .filter(({ score }) => score > 0)
    .sort((left, right) => right.score - left.score || left.document.id.localeCompare(right.document.id))
    .slice(0, limit)
    .map(({ document, score, firstIndex }) => ({
      id: document.id,
      title: document.title,
      score,
      snippet: snippetAround(document.content, Math.max(0, firstIndex)),
    }));
}

/** The `search_local_sources` read tool over a corpus folder. */
export function searchLocalSourcesTool(corpus: Corpus): ToolDefinition {
  return defineTool({
    name: 'search_local_sources',
    description:
      'Search the local knowledge base of markdown documents. Returns the ids, titles and a snippet of the best matches; read a whole document with get_document.',
    input: searchLocalSourcesInput,
    effect: 'read',
    timeout: '10s',
    maxAttempts: 3,
    maxOutputChars: 4_000,
    handler: async (args, { signal }) => ToolOutcome.ok({ matches: await searchCorpus(corpus, args, signal) }),
  });
}
