// The full-text index of a corpus folder: a refresh brings it up to the files, a search ranks their sections, and a document is read whole.
import type { Stats } from 'node:fs';
import path from 'node:path';
import { lstatTreeFile, openTree, readTreeFile, type Tree, type TreeRefusal } from '../../hardened/tree-file';
import { documentText, indexedBody, type DocumentFormat, type DocumentSection } from './document-text';
import { documentId, hashOf, looksBinary, MAX_FILE_BYTES, scanFolder, type ScannedFile } from './folder-scan';
import { openDatabase, SECTION_SLOTS, type FileRow } from './index-database';
import { ftsQuery } from './query-terms';

/** One indexed document: its id (the path in the folder, `.md` left off), title, format, text and sections. */
export interface IndexedDocument {
  id: string;
  /** The file's path inside the folder, with `/` separators. */
  path: string;
  title: string;
  format: DocumentFormat;
  text: string;
  sections: DocumentSection[];
}

/** One search hit: a section of a document, its BM25 score (higher is better) and a snippet around its best match. */
export interface SearchHit {
  id: string;
  title: string;
  section: string;
  sectionIndex: number;
  score: number;
  snippet: string;
}

/** Where a search looks: the whole folder, one folder inside it, or one document. */
export interface SearchScope {
  /** A folder inside the corpus, e.g. `policies` or `policies/hr`. */
  folder?: string;
  /** A document id: the hits are then its sections. */
  document?: string;
}

/** What the index holds and what this handle did since it was opened. */
export interface IndexStats {
  documents: number;
  sections: number;
  /** Files of the last scan the index does not read: other formats, binary, too large, unreadable. */
  skipped: number;
  /** A few of them with the reason, for a message. */
  skippedExamples: Array<{ path: string; reason: string }>;
  /** Of the skipped files, those the tree refused to read (links, special files, too large, past the walk's bounds). */
  refused: number;
  /** Documents this handle parsed and wrote (first build, changed files); 0 when it reused the index as found. */
  indexedByThisHandle: number;
  /** Documents this handle removed because their file was gone. */
  removedByThisHandle: number;
}

/** A full-text index of a folder's documents in one SQLite file (FTS5, Porter stemming, BM25). */
export interface SearchIndex {
  folder: string;
  file: string;
  /** Brings the index up to date with the folder: new and changed files (by mtime and size, then hash) in, deleted ones out. */
  refresh(): void;
  /** The best sections for a query's words, at most one per document unless the scope is one document. */
  search(query: string, options: SearchScope & { limit: number }): SearchHit[];
  /** One document by id. */
  document(id: string): IndexedDocument | undefined;
  /** Why the last refresh refused the file a document id would name (a link, a FIFO, too large…), or nothing. */
  refusalOf(id: string): TreeRefusal | undefined;
  /** Every file the last refresh refused to read, with its reason: never any of its content. */
  refusals(): TreeRefusal[];
  /** Every document's id, path and title, in path order. */
  list(scope?: SearchScope): Array<{ id: string; path: string; title: string; size: number }>;
  stats(): IndexStats;
  close(): void;
}

/** Whether a document path lies in the scope. */
function inScope(documentPath: string, id: string, scope: SearchScope): boolean {
  if (scope.document !== undefined && id !== scope.document) return false;
  if (scope.folder !== undefined) {
    const folder = scope.folder.replace(/^\.?\/+|\/+$/g, '');
    if (folder !== '' && !documentPath.startsWith(`${folder}/`)) return false;
  }
  return true;
}

/**
 * Opens (or creates) the index of `folder` in `file` (`:memory:` for one that lives as long as the
 * handle). Several processes may share the file: it is in WAL mode, every change of one document
 * is one `BEGIN IMMEDIATE` transaction that checks again what it replaces, and a writer waits for
 * another's lock rather than failing.
 */
export function openSearchIndex(folder: string, file: string): SearchIndex {
  let tree: Tree;
  try {
    tree = openTree(folder);
  } catch (error) {
    throw new Error(`corpus ${(error as Error).message}`, { cause: error });
  }
  const db = openDatabase(file);
  const selectStates = db.prepare<[], Pick<FileRow, 'path' | 'id' | 'mtime_ms' | 'size' | 'hash'>>(
    'SELECT path, id, mtime_ms, size, hash FROM files',
  );
  const selectState = db.prepare<[string], Pick<FileRow, 'hash'>>('SELECT hash FROM files WHERE path = ?');
  const selectById = db.prepare<[string], FileRow>('SELECT * FROM files WHERE id = ?');
  const selectIdByPath = db.prepare<[string], { id: string }>('SELECT id FROM files WHERE path = ?');
  const selectIdOwner = db.prepare<[string], { path: string }>('SELECT path FROM files WHERE id = ?');
  const touch = db.prepare('UPDATE files SET mtime_ms = ?, size = ? WHERE path = ?');
  const deleteFile = db.prepare('DELETE FROM files WHERE path = ?');
  const selectNumber = db.prepare<[string], { no: number }>('SELECT no FROM files WHERE path = ?');
  const nextNumber = db.prepare<[], { no: number }>('SELECT coalesce(max(no), 0) + 1 AS no FROM files');
  const deleteRange = db.prepare('DELETE FROM sections WHERE rowid >= ? AND rowid < ?');
  const deleteSections = (relative: string) => {
    const no = selectNumber.get(relative)?.no;
    if (no !== undefined) deleteRange.run(no * SECTION_SLOTS, (no + 1) * SECTION_SLOTS);
  };
  const insertFile = db.prepare(
    `INSERT INTO files (path, no, id, title, format, mtime_ms, size, hash, text, sections)
     VALUES (@path, @no, @id, @title, @format, @mtime, @size, @hash, @text, @sections)`,
  );
  const insertSection = db.prepare('INSERT INTO sections (rowid, title, heading, body, doc, section) VALUES (?, ?, ?, ?, ?, ?)');
  const counts = db.prepare<[], { documents: number; sections: number }>(
    'SELECT (SELECT count(*) FROM files) AS documents, (SELECT count(*) FROM sections) AS sections',
  );
  const listRows = db.prepare<[], { id: string; path: string; title: string; size: number }>(
    'SELECT id, path, title, length(text) AS size FROM files ORDER BY path',
  );
  let skipped: Array<{ path: string; reason: string }> = [];
  let refused: TreeRefusal[] = [];
  let indexed = 0;
  let removed = 0;

  /** Writes one file's document, unless another process already wrote this very content. */
  const replace = db.transaction((scanned: ScannedFile, bytes: Buffer, hash: string) => {
    const { path: relative, stats, format } = scanned;
    if (selectState.get(relative)?.hash === hash) {
      touch.run(stats.mtimeMs, stats.size, relative);
      return;
    }
    const wanted = documentId(relative);
    const owner = selectIdOwner.get(wanted)?.path;
    const id = owner === undefined || owner === relative ? wanted : relative;
    const parsed = documentText(format, bytes.toString('utf8'), path.basename(wanted));
    if (parsed.sections.length >= SECTION_SLOTS) parsed.sections = [{ ...parsed.sections[0], index: 0, end: parsed.text.length }];
    deleteSections(relative);
    deleteFile.run(relative);
    const no = nextNumber.get()!.no;
    insertFile.run({
      path: relative,
      no,
      id,
      title: parsed.title,
      format,
      mtime: stats.mtimeMs,
      size: stats.size,
      hash,
      text: parsed.text,
      sections: JSON.stringify(parsed.sections),
    });
    for (const section of parsed.sections) {
      // A heading that repeats the title (the `# Title` section) adds nothing the title column does not already weigh.
      const heading = section.heading === parsed.title ? '' : section.heading;
      const body = indexedBody(format, parsed.text, section);
      insertSection.run(no * SECTION_SLOTS + section.index, parsed.title, heading, body, relative, section.index);
    }
    indexed++;
  });
  const touchOnly = db.transaction((relative: string, stats: Stats) => touch.run(stats.mtimeMs, stats.size, relative));
  const remove = (relative: string) => {
    deleteSections(relative);
    if (deleteFile.run(relative).changes > 0) removed++;
  };
  /** Removes a document whose file is gone (or is no longer a regular file the tree reads), unless it is back by now. */
  const forget = db.transaction((relative: string) => {
    if (!lstatTreeFile(tree, relative).stats) remove(relative);
  });
  const forgetNow = db.transaction(remove);

  function refresh(): void {
    const scan = scanFolder(tree);
    const known = new Map(selectStates.all().map((row) => [row.path, row]));
    for (const scanned of scan.files) {
      const row = known.get(scanned.path);
      known.delete(scanned.path);
      if (row && row.mtime_ms === scanned.stats.mtimeMs && row.size === scanned.stats.size) continue;
      const read = readTreeFile(tree, scanned.path, { maxBytes: MAX_FILE_BYTES });
      if (!read.ok) {
        scan.refused.push(read.refusal);
        scan.skipped.push({ path: scanned.path, reason: read.refusal.detail });
        if (row) forgetNow.immediate(scanned.path);
        continue;
      }
      const { bytes } = read;
      if (looksBinary(bytes)) {
        scan.skipped.push({ path: scanned.path, reason: 'binary content' });
        if (row) forgetNow.immediate(scanned.path);
        continue;
      }
      const hash = hashOf(bytes);
      if (row && row.hash === hash) touchOnly.immediate(scanned.path, scanned.stats);
      else replace.immediate(scanned, bytes, hash);
    }
    // Whatever the walk did not hand over (gone, refused, past its bounds) leaves the index.
    for (const gone of known.keys()) forget.immediate(gone);
    skipped = scan.skipped;
    refused = scan.refused;
  }

  const rowToDocument = (row: FileRow): IndexedDocument => ({
    id: row.id,
    path: row.path,
    title: row.title,
    format: row.format,
    text: row.text,
    sections: JSON.parse(row.sections) as DocumentSection[],
  });

  function search(query: string, { limit, ...scope }: SearchScope & { limit: number }): SearchHit[] {
    const match = ftsQuery(query);
    if (match === undefined) return [];
    const filters: string[] = [];
    const values: unknown[] = [match];
    if (scope.document !== undefined) {
      const owner = selectIdOwner.get(scope.document);
      const no = owner && selectNumber.get(owner.path)?.no;
      if (!no) return [];
      filters.push('rowid >= ? AND rowid < ?');
      values.push(no * SECTION_SLOTS, (no + 1) * SECTION_SLOTS);
    }
    const folderFilter = scope.folder?.replace(/^\.?\/+|\/+$/g, '');
    if (folderFilter) {
      filters.push('substr(doc, 1, ?) = ?');
      values.push(folderFilter.length + 1, `${folderFilter}/`);
    }
    const perDocument = scope.document === undefined;
    const hits: SearchHit[] = [];
    const seen = new Set<string>();
    for (let fetch = limit * 8; ; fetch *= 4) {
      const rows = db
        .prepare<unknown[], { doc: string; section: number; heading: string; title: string; score: number; snippet: string }>(
          `SELECT doc, section, CASE heading WHEN '' THEN title ELSE heading END AS heading, title, -rank AS score, snippet(sections, 2, '', '', '…', 24) AS snippet
           FROM sections WHERE sections MATCH ?${filters.map((filter) => ` AND ${filter}`).join('')}
           ORDER BY rank LIMIT ?`,
        )
        .all(...values, fetch);
      hits.length = 0;
      seen.clear();
      for (const row of rows) {
        if (perDocument && seen.has(row.doc)) continue;
        seen.add(row.doc);
        hits.push({
          id: selectIdByPath.get(row.doc)?.id ?? documentId(row.doc),
          title: row.title,
          section: row.heading,
          sectionIndex: row.section,
          score: Math.round(row.score * 1000) / 1000,
          snippet: row.snippet.replace(/\s+/g, ' ').trim(),
        });
        if (hits.length === limit) break;
      }
      if (hits.length === limit || rows.length < fetch) break;
    }
    return hits;
  }

  return {
    folder,
    file,
    refresh,
    search,
    document(id) {
      const row = selectById.get(id);
      return row ? rowToDocument(row) : undefined;
    },
    refusalOf(id) {
      return refused.find((entry) => entry.path === id || documentId(entry.path) === id);
    },
    refusals: () => refused,
    list(scope = {}) {
      return listRows.all().filter((row) => inScope(row.path, row.id, scope));
    },
    stats() {
      return {
        ...counts.get()!,
        skipped: skipped.length,
        skippedExamples: skipped.slice(0, 5),
        refused: refused.length,
        indexedByThisHandle: indexed,
        removedByThisHandle: removed,
      };
    },
    close() {
      db.close();
    },
  };
}
