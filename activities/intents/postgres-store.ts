import pg from 'pg';
import type { ToolResult } from '../../common/types';
import { INTENT_COLUMNS_SQL, recordFromRow, type IdempotencyStore, type IntentRow } from './intent-store';

/**
 * The idempotency store on PostgreSQL, for several workers on several machines: the same table
 * and the same rules as the SQLite store (a started intent is only overwritten while started; a
 * committed one never).
 */
export function openPostgresStore(connectionString: string): IdempotencyStore {
  const pool = new pg.Pool({ connectionString, max: 10 });
  const ready = pool.query(`CREATE TABLE IF NOT EXISTS tollgate_intents (${INTENT_COLUMNS_SQL})`);
  const query = async (text: string, values: unknown[]) => {
    await ready;
    return pool.query<IntentRow>(text, values);
  };
  return {
    async get(key) {
      return recordFromRow((await query('SELECT * FROM tollgate_intents WHERE key = $1', [key])).rows[0]);
    },
    async markStarted({ key, taskId, tool, callId }) {
      await query(
        `INSERT INTO tollgate_intents (key, task_id, tool, call_id, state, started_at) VALUES ($1, $2, $3, $4, 'started', $5)
         ON CONFLICT (key) DO UPDATE SET call_id = EXCLUDED.call_id, started_at = EXCLUDED.started_at WHERE tollgate_intents.state = 'started'`,
        [key, taskId, tool, callId, new Date().toISOString()],
      );
    },
    async markCommitted(key: string, receipt: ToolResult) {
      const now = new Date().toISOString();
      const updated = await query(`UPDATE tollgate_intents SET state = 'committed', receipt = $2, committed_at = $3 WHERE key = $1`, [key, JSON.stringify(receipt), now]);
      if (updated.rowCount === 0) {
        await query(
          `INSERT INTO tollgate_intents (key, task_id, tool, call_id, state, receipt, started_at, committed_at) VALUES ($1, '', '', '', 'committed', $2, $3, $3) ON CONFLICT (key) DO NOTHING`,
          [key, JSON.stringify(receipt), now],
        );
      }
    },
    async forget(key) {
      await query(`DELETE FROM tollgate_intents WHERE key = $1 AND state = 'started'`, [key]);
    },
    async close() {
      await ready.catch(() => undefined);
      await pool.end();
    },
  };
}
