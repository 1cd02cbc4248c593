import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { ToolResult } from '../common/types';

/** One write intent as the store knows it. */
export interface IntentRecord {
  key: string;
  taskId: string;
  tool: string;
  callId: string;
  /** `started` is written before the side effect, `committed` with its receipt after it. */
  state: 'started' | 'committed';
  receipt?: ToolResult;
  startedAt: string;
  committedAt?: string;
}

/** Where write intents are recorded durably, so that no retry and no repeat writes twice. */
export interface IdempotencyStore {
  get(key: string): Promise<IntentRecord | undefined>;
  /** Records that the side effect is about to happen. */
  markStarted(record: { key: string; taskId: string; tool: string; callId: string }): Promise<void>;
  /** Records that it happened, with the result the model saw. */
  markCommitted(key: string, receipt: ToolResult): Promise<void>;
  /** Forgets a started intent whose tool said, definitely, that it did nothing. */
  forget(key: string): Promise<void>;
  close(): Promise<void>;
}

/** A stored row, as both stores keep it. */
export interface IntentRow {
  key: string;
  task_id: string;
  tool: string;
  call_id: string;
  state: 'started' | 'committed';
  receipt: string | null;
  started_at: string;
  committed_at: string | null;
}

/** The columns of the intents table, the same in both stores. */
export const INTENT_COLUMNS_SQL = `key TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('started', 'committed')),
    receipt TEXT,
    started_at TEXT NOT NULL,
    committed_at TEXT`;

/** A row as the record the boundary reads. */
export function recordFromRow(row: IntentRow | undefined): IntentRecord | undefined {
  return (
    row && {
      key: row.key,
      taskId: row.task_id,
      tool: row.tool,
      callId: row.call_id,
      state: row.state,
      receipt: row.receipt ? (JSON.parse(row.receipt) as ToolResult) : undefined,
      startedAt: row.started_at,
      committedAt: row.committed_at ?? undefined,
    }
  );
}

/** The embedded store: one SQLite file (WAL), safe for several workers on one machine. */
export function openSqliteStore(file: string): IdempotencyStore {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.exec(`CREATE TABLE IF NOT EXISTS intents (${INTENT_COLUMNS_SQL})`);
  const select = db.prepare<[string], IntentRow>('SELECT * FROM intents WHERE key = ?');
  const insertStarted = db.prepare(
    `INSERT INTO intents (key, task_id, tool, call_id, state, started_at) VALUES (@key, @taskId, @tool, @callId, 'started', @now)
     ON CONFLICT (key) DO UPDATE SET call_id = excluded.call_id, started_at = excluded.started_at WHERE intents.state = 'started'`,
  );
  const commit = db.prepare(`UPDATE intents SET state = 'committed', receipt = @receipt, committed_at = @now WHERE key = @key`);
  const insertCommitted = db.prepare(
    `INSERT INTO intents (key, task_id, tool, call_id, state, receipt, started_at, committed_at) VALUES (@key, '', '', '', 'committed', @receipt, @now, @now)
     ON CONFLICT (key) DO NOTHING`,
  );
  const remove = db.prepare(`DELETE FROM intents WHERE key = ? AND state = 'started'`);
  return {
    async get(key) {
      return recordFromRow(select.get(key));
    },
    async markStarted({ key, taskId, tool, callId }) {
      insertStarted.run({ key, taskId, tool, callId, now: new Date().toISOString() });
    },
    async markCommitted(key, receipt) {
      const values = { key, receipt: JSON.stringify(receipt), now: new Date().toISOString() };
      if (commit.run(values).changes === 0) insertCommitted.run(values);
    },
    async forget(key) {
      remove.run(key);
    },
    async close() {
      db.close();
    },
  };
}
