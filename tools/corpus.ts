import { createHash } from 'node:crypto';
import path from 'node:path';
import { openSearchIndex, type SearchIndex } from './search-index';

/** One document of the corpus: its id (its path in the folder, `.md` left off), title and text. */
export interface CorpusDocument {
  id: string;
  title: string;
  content: string;
}

/**
 * The documents the read tools search: Markdown, plain text and HTML files anywhere under a
 * folder, kept in a full-text index that every call first brings up to date, so edits show at once.
 */
export interface Corpus {
  folder: string;
  /** The index, opened (and built, the first time) on first use and brought up to date. */
  index(): SearchIndex;
  /** Every document with its whole text, in path order. */
  documents(): CorpusDocument[];
  /** How many files the last refresh skipped (other formats, binary, too large); 0 before the first. */
  skippedFiles(): number;
}

/** Where the index of `folder` lives in a state folder: one file per corpus folder, named by a hash of its path. */
export function indexFileFor(stateFolder: string, folder: string): string {
  const digest = createHash('sha256').update(path.resolve(folder)).digest('hex').slice(0, 16);
  return path.join(stateFolder, `search-index-${digest}.db`);
}

/**
 * Opens the corpus folder; a missing folder is an error naming it when the corpus is first used.
 * With `stateFolder` the index is a file there that survives restarts and is shared by every
 * worker on the machine; without it the index lives in memory as long as the corpus.
 */
export function openCorpus(folder: string, { stateFolder }: { stateFolder?: string } = {}): Corpus {
  let index: SearchIndex | undefined;
  const current = (): SearchIndex => {
    index ??= openSearchIndex(folder, stateFolder === undefined ? ':memory:' : indexFileFor(stateFolder, folder));
    index.refresh();
    return index;
  };
  return {
    folder,
    index: current,
    skippedFiles: () => index?.stats().skipped ?? 0,
    documents() {
      const opened = current();
      return opened.list().map(({ id }) => {
        const document = opened.document(id)!;
        return { id, title: document.title, content: document.text };
      });
    },
  };
}
