// What a search query means to the index: its meaningful words, and an FTS5 query of them that is never a syntax error.

/** Query words beyond this many are ignored. */
const MAX_QUERY_TERMS = 32;

const STOP_WORDS = new Set(
  'a an and are as at be by can do does for from how i in is it my of on or our the to we what when which who why with you'.split(' '),
);

/** The meaningful words of a query, lower-cased, stop words left out unless nothing else is left. */
export function queryTerms(query: string): string[] {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
  const meaningful = words.filter((word) => !STOP_WORDS.has(word));
  return (meaningful.length > 0 ? meaningful : words).slice(0, MAX_QUERY_TERMS);
}

/**
 * An FTS5 query that can never be a syntax error: each word quoted as a string (a word is only
 * letters and digits, so it holds no quote), the words joined by OR; undefined when no word is left.
 */
export function ftsQuery(query: string): string | undefined {
  const terms = queryTerms(query);
  return terms.length === 0 ? undefined : terms.map((term) => `"${term}"`).join(' OR ');
}
