import { createHash } from 'node:crypto';
import path from 'node:path';
import type { TreeRefusal } from '../../hardened/tree-file';
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
  /** How many files the last refresh skipped (other formats, binary, too large, refused); 0 before the first. */
  skippedFiles(): number;
  /** Why the file a document id names was refused (a link, a special file, too large…), or nothing. */
  refusalOf(id: string): TreeRefusal | undefined;
}

/** How many logged refusal lines a corpus remembers, so as not to repeat them at every refresh. */
const MAX_REMEMBERED_LINES = 10_000;

/** What opening a corpus may be told: where its index lives, and where its refusals are logged. */
export interface CorpusOptions {
  /** The state folder the index file lives in; without one the index lives in memory. */
  stateFolder?: string;
  /** Where a refused file is reported, one line naming it and why (never its content); the worker's log by default. */
  log?: (line: string) => void;
}

/** The worker log line of one refused file of a corpus: its path and reason, never a byte of its content. */
export function refusalLine(folder: string, { path: where, reason, detail }: TreeRefusal): string {
  // The path is quoted as JSON, so a file name holding a line break or a control character cannot forge a log line.
  return `corpus ${folder}: not indexed: ${JSON.stringify(where)}: ${detail} [${reason}]`;
}

/** Where the index of `folder` lives in a state folder: one file per corpus folder, named by a hash of its path. */
export function indexFileFor(stateFolder: string, folder: string): string {
  const digest = createHash('sha256').update(path.resolve(folder)).digest('hex').slice(0, 16);
  return path.join(stateFolder, `search-index-${digest}.db`);
}

/**
 * Opens the corpus folder; a missing folder is an error naming it when the corpus is first used.
 * With `stateFolder` the index is a file there that survives restarts and is shared by every
 * worker on the machine; without it the index lives in memory as long as the corpus. Every file
 * is read through the hardened tree reader (no link followed, no special file, a byte cap); each
 * file it refuses is logged once per path and reason, as it is found again at every refresh.
 */
export function openCorpus(folder: string, { stateFolder, log = (line) => console.warn(line) }: CorpusOptions = {}): Corpus {
  let index: SearchIndex | undefined;
  const logged = new Set<string>();
  const current = (): SearchIndex => {
    index ??= openSearchIndex(folder, stateFolder === undefined ? ':memory:' : indexFileFor(stateFolder, folder));
    index.refresh();
    for (const refusal of index.refusals()) {
      const line = refusalLine(folder, refusal);
      if (logged.has(line)) continue;
      if (logged.size >= MAX_REMEMBERED_LINES) logged.clear();
      logged.add(line);
      log(line);
    }
    return index;
  };
  return {
    folder,
    index: current,
    skippedFiles: () => index?.stats().skipped ?? 0,
    refusalOf: (id) => index?.refusalOf(id),
    documents() {
      const opened = current();
      return opened.list().map(({ id }) => {
        const document = opened.document(id)!;
        return { id, title: document.title, content: document.text };
      });
    },
  };
}
