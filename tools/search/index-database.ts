// The SQLite file of a search index: its tables (one row per document, one FTS5 row per section), schema version and pragmas.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { DocumentFormat } from './document-text';

/**
 * Bumped when the tables or what they hold change; an index of another version is rebuilt. Version
 * 4 is the first that reads no file through a link, so an older index, which may hold the text of
 * a file outside the corpus reached through one, is never served.
 */
const SCHEMA_VERSION = '4';
/** BM25 weights of the columns title, heading and body: a title or heading word counts for more than a body word. */
export const COLUMN_WEIGHTS = { title: 8, heading: 4, body: 1 } as const;
/**
 * A section's rowid in the FTS5 table is its document's number times this plus its index, so that a
 * document's sections are one rowid range: found and deleted without scanning the table.
 */
export const SECTION_SLOTS = 1 << 20;

/** One document's row in the `files` table. */
export interface FileRow {
  path: string;
  id: string;
  title: string;
  format: DocumentFormat;
  mtime_ms: number;
  size: number;
  hash: string;
  text: string;
  sections: string;
}

/** Opens the index file (creating its folder and tables), dropping tables of another schema version. */
export function openDatabase(file: string): Database.Database {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 10000');
  // The index can always be rebuilt from the files: a commit need not wait for the disk, only stay atomic.
  db.pragma('synchronous = NORMAL');
  // Deleted text is overwritten, not left in free pages: a document dropped because its file became a link, or a
  // whole index of an older version rebuilt, leaves none of its text in the file.
  db.pragma('secure_delete = ON');
  const create = db.transaction(() => {
    db.exec('CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    const version = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'schema'").get()?.value;
    if (version !== undefined && version !== SCHEMA_VERSION) db.exec('DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS sections;');
    db.exec(`CREATE TABLE IF NOT EXISTS files (
      path TEXT PRIMARY KEY, no INTEGER NOT NULL UNIQUE, id TEXT NOT NULL UNIQUE, title TEXT NOT NULL, format TEXT NOT NULL,
      mtime_ms REAL NOT NULL, size INTEGER NOT NULL, hash TEXT NOT NULL, text TEXT NOT NULL, sections TEXT NOT NULL)`);
    db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS sections USING fts5(
      title, heading, body, doc UNINDEXED, section UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')`);
    const { title, heading, body } = COLUMN_WEIGHTS;
    db.prepare("INSERT INTO sections (sections, rank) VALUES ('rank', ?)").run(`bm25(${title}, ${heading}, ${body}, 0, 0)`);
    db.prepare("INSERT INTO meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(
      SCHEMA_VERSION,
    );
  });
  create.immediate();
  return db;
}
