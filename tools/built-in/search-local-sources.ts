import { z } from 'zod';
import type { Corpus, CorpusDocument } from '../corpus';
import { defineTool, type ToolDefinition } from '../define-tool';
import { ToolOutcome } from '../tool-outcome';

const STOP_WORDS = new Set(['a', 'an', 'and', 'are', 'as', 'at', 'be', 'by', 'do', 'for', 'from', 'how', 'i', 'in', 'is', 'it', 'of', 'on', 'or', 'our', 'the', 'to', 'we', 'what', 'when', 'which', 'who', 'with', 'you']);

/** The arguments of `search_local_sources`; an invalid regular expression fails validation, so it never executes. */
export const searchLocalSourcesInput = z
  .strictObject({
    query: z.string().min(1).max(500).describe('Words to look for, or a regular expression when mode is "regex".'),
    mode: z.enum(['words', 'regex']).default('words').describe('"words": documents matching any of the words, best first; "regex": a case-insensitive regular expression.'),
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
  const text = content.slice(start, start + 160).replace(/\s+/g, ' ').trim();
  return `${start > 0 ? '…' : ''}${text}${start + 160 < content.length ? '…' : ''}`;
}

function scoreDocument(document: CorpusDocument, patterns: RegExp[]): { score: number; firstIndex: number } {
  let score = 0;
  let firstIndex = -1;
  for (const pattern of patterns) {
    const inTitle = document.title.match(new RegExp(pattern.source, 'gi'))?.length ?? 0;
    const inContent = [...document.content.matchAll(new RegExp(pattern.source, 'gi'))];
    score += inTitle * 3 + inContent.length;
    if (inContent.length > 0 && (firstIndex === -1 || inContent[0].index < firstIndex)) firstIndex = inContent[0].index;
  }
  return { score, firstIndex };
}

/** Searches the corpus for words or a regular expression; no match is a success with an empty list. */
export function searchCorpus(corpus: Corpus, { query, mode, limit }: z.output<typeof searchLocalSourcesInput>): SearchMatch[] {
  const patterns =
    mode === 'regex' ? [new RegExp(query, 'i')] : queryWords(query).map((word) => new RegExp(`\\b${escapeRegExp(wordStem(word))}`, 'i'));
  if (patterns.length === 0) return [];
  return corpus
    .documents()
    .map((document) => ({ document, ...scoreDocument(document, patterns) }))
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
    description: 'Search the local knowledge base of markdown documents. Returns the ids, titles and a snippet of the best matches; read a whole document with get_document.',
    input: searchLocalSourcesInput,
    effect: 'read',
    timeout: '10s',
    maxAttempts: 3,
    maxOutputChars: 4_000,
    handler: (args) => ToolOutcome.ok({ matches: searchCorpus(corpus, args) }),
  });
}
