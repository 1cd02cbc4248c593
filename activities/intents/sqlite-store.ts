import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { INTENT_COLUMNS_SQL, recordFromRow, type IdempotencyStore, type IntentRow } from './intent-store';

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
