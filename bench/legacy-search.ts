// The search of the read tools before the full-text index, kept as the retrieval benchmark's
// baseline: every document scanned with one regular expression per query word (cut to a crude
// stem), ranked by match counts, a title match counting three. Words mode only; the code as it was.
import type { CorpusDocument } from '../tools/search/corpus';
import type { MatchCount } from '../tools/built-in/regex-search-worker';
// The two helpers the search kept unchanged from this algorithm are shared, not copied.
import { countMatches, snippetAround } from '../tools/built-in/search-local-sources';
// The scripted plan still picks its search words the way this search did.
import { queryWords, wordStem } from '../tools/built-in/scripted-plan';

/** One search hit: enough for the model to choose what to read. */
export interface SearchMatch {
  id: string;
  title: string;
  score: number;
  snippet: string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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

/** The old words-mode search over documents held in memory: the best `limit` documents, best first. */
export function legacySearch(documents: CorpusDocument[], query: string, limit: number): SearchMatch[] {
  const patterns = queryWords(query).map((word) => new RegExp(`\\b${escapeRegExp(wordStem(word))}`, 'i'));
  if (patterns.length === 0) return [];
  return documents
    .map((document) => ({ document, ...scoreCounts(patterns.map((pattern) => countMatches(pattern, document))) }))
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
