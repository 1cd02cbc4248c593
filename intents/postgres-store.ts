import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { ToolResult } from '../common/contract/tools';
import {
  ADDED_COLUMNS,
  checkClaimRequest,
  checkKeptContent,
  checkSentNotification,
  claimDecision,
  CONTENT_COLUMNS_SQL,
  DEFAULT_IN_FLIGHT_GRACE_MS,
  INTENT_COLUMNS_SQL,
  IntentStoreError,
  NOTIFICATION_COLUMNS_SQL,
  recordFromRow,
  sentNotificationFromRow,
  type ClaimRequest,
  type ClaimResult,
  type IdempotencyStore,
  type IntentRow,
  type IntentStoreOptions,
  type SentNotificationRow,
} from './intent-store';

/** How long a store call waits for a connection, and for one statement, before it fails with a clear error. */
export const POSTGRES_TIMEOUTS = { connectMs: 5_000, queryMs: 10_000 } as const;

/**
 * A connection taken from the pool for one transaction. The pool listens for errors only on idle
 * connections, so one lost while taken (an outage cutting it) would emit an unhandled error and end
 * the process; here the loss only fails the connection's queries, and the connection is destroyed
 * when it is given back.
 */
export async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  let lost = false;
  const onError = () => {
    lost = true;
  };
  client.on('error', onError);
  const release = client.release.bind(client);
  client.release = (destroy?: boolean | Error) => {
    client.removeListener('error', onError);
    release(destroy || lost);
  };
  return client;
}

/** The database's own clock in milliseconds, so that workers on several machines judge leases by one clock. */
const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/**
 * The idempotency store on PostgreSQL, for several workers on several machines: the same table
 * and the same rules as the SQLite store. A claim holds the intent's row lock (`FOR UPDATE`) while
 * it decides, so exactly one concurrent claimant wins. The pool reconnects by itself after an
 * outage; the table setup is retried on the next call when it failed, never cached as failed.
 */
export function openPostgresStore(
  connectionString: string,
  { inFlightGraceMs = DEFAULT_IN_FLIGHT_GRACE_MS }: IntentStoreOptions = {},
): IdempotencyStore {
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: POSTGRES_TIMEOUTS.connectMs,
    query_timeout: POSTGRES_TIMEOUTS.queryMs,
  });
  // An idle connection cut by a server restart is dropped by the pool; without a listener the error would end the process.
  pool.on('error', () => undefined);
  let ready: Promise<void> | undefined;
  const setup = (): Promise<void> =>
    (ready ??= (async () => {
      const client = await checkOut(pool);
      try {
        await client.query('BEGIN');
        // Two workers opening a fresh database at once would race on CREATE TABLE without this lock.
        await client.query(`SELECT pg_advisory_xact_lock(hashtext('tollgate_intents'))`);
        await client.query(`CREATE TABLE IF NOT EXISTS tollgate_intents (${INTENT_COLUMNS_SQL})`);
        for (const column of ADDED_COLUMNS)
          await client.query(`ALTER TABLE tollgate_intents ADD COLUMN IF NOT EXISTS ${column.name} ${column.postgresType}`);
        await client.query('CREATE INDEX IF NOT EXISTS tollgate_intents_by_task ON tollgate_intents (task_id, started_at)');
        await client.query('CREATE INDEX IF NOT EXISTS tollgate_intents_by_commit ON tollgate_intents (state, committed_at)');
        await client.query(`CREATE TABLE IF NOT EXISTS tollgate_kept_contents (${CONTENT_COLUMNS_SQL})`);
        await client.query('CREATE INDEX IF NOT EXISTS tollgate_kept_contents_by_time ON tollgate_kept_contents (kept_at)');
        await client.query(`CREATE TABLE IF NOT EXISTS tollgate_sent_notifications (${NOTIFICATION_COLUMNS_SQL})`);
        await client.query('CREATE INDEX IF NOT EXISTS tollgate_sent_notifications_by_time ON tollgate_sent_notifications (sent_at)');
        await client.query('COMMIT');
        client.release();
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release(true);
        throw error;
      }
    })().catch((error: unknown) => {
      ready = undefined;
      throw error;
    }));

  async function guarded<T>(operation: string, work: () => Promise<T>): Promise<T> {
    try {
      await setup();
      return await work();
    } catch (error) {
      throw IntentStoreError.isInstance(error) ? error : new IntentStoreError(operation, error);
    }
  }

  const query = (text: string, values: unknown[]) => pool.query<IntentRow>(text, values);

  /** One claim, in one transaction holding the row's lock; undefined when the row vanished between the insert and the lock (a release), to try again. */
  async function claimOnce(request: ClaimRequest): Promise<ClaimResult | undefined> {
    const client = await checkOut(pool);
    let broken = false;
    try {
      await client.query('BEGIN');
      const now = Number((await client.query<{ now: string }>(`SELECT ${NOW_MS} AS now`)).rows[0]!.now);
      const owner = request.owner ?? randomUUID();
      const values = [
        request.key,
        request.taskId,
        request.tool,
        request.callId,
        new Date(now).toISOString(),
        request.effect,
        request.argsDigest,
        owner,
        now + request.leaseMs + inFlightGraceMs,
      ];
      const inserted = await client.query<IntentRow>(
        `INSERT INTO tollgate_intents (key, task_id, tool, call_id, state, started_at, effect, args_digest, owner, lease_until)
         VALUES ($1, $2, $3, $4, 'started', $5, $6, $7, $8, $9) ON CONFLICT (key) DO NOTHING RETURNING *`,
        values,
      );
      if (inserted.rows[0]) {
        await client.query('COMMIT');
        return { claimed: true, owner, record: recordFromRow(inserted.rows[0])! };
      }
      const existing = (await client.query<IntentRow>('SELECT * FROM tollgate_intents WHERE key = $1 FOR UPDATE', [request.key])).rows[0];
      if (!existing) {
        await client.query('ROLLBACK');
        return undefined;
      }
      const record = recordFromRow(existing)!;
      const decision = claimDecision(existing, request, now);
      if (decision !== 'take_over') {
        await client.query('COMMIT');
        return decision === 'own' ? { claimed: true, owner, record } : { claimed: false, record };
      }
      const updated = await client.query<IntentRow>(
        `UPDATE tollgate_intents SET task_id = $2, tool = $3, call_id = $4, state = 'started', receipt = NULL, committed_at = NULL,
           started_at = $5, effect = $6, args_digest = $7, owner = $8, lease_until = $9
         WHERE key = $1 RETURNING *`,
        values,
      );
      await client.query('COMMIT');
      return { claimed: true, owner, record: recordFromRow(updated.rows[0])!, replaced: record };
    } catch (error) {
      broken = true;
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      // A connection that failed mid-transaction is destroyed rather than handed to the next call.
      client.release(broken);
    }
  }

  return {
    get(key) {
      return guarded(`read intent ${key}`, async () =>
        recordFromRow((await query('SELECT * FROM tollgate_intents WHERE key = $1', [key])).rows[0]),
      );
    },
    claim(request) {
      try {
        checkClaimRequest(request);
      } catch (error) {
        return Promise.reject(error);
      }
      return guarded(`claim intent ${request.key}`, async () => {
        for (let round = 0; round < 5; round++) {
          const result = await claimOnce(request);
          if (result) return result;
        }
        throw new Error('the intent was released and claimed again five times while this claim ran');
      });
    },
    commit({ key, owner, receipt }) {
      return guarded(`commit intent ${key}`, async () => {
        const now = new Date().toISOString();
        // Only the started record of this very claim; a record another claim holds is left as it is.
        const updated = await query(
          `UPDATE tollgate_intents SET state = 'committed', receipt = $2, committed_at = $3 WHERE key = $1 AND owner = $4 AND state = 'started'`,
          [key, JSON.stringify(receipt), now, owner],
        );
        if (updated.rowCount === 1) return true;
        const inserted = await query(
          `INSERT INTO tollgate_intents (key, task_id, tool, call_id, state, receipt, started_at, committed_at, owner) VALUES ($1, '', '', '', 'committed', $2, $3, $3, $4) ON CONFLICT (key) DO NOTHING`,
          [key, JSON.stringify(receipt), now, owner],
        );
        return inserted.rowCount === 1;
      });
    },
    recordApplied({
      key,
      taskId,
      tool,
      argsDigest,
      receipt,
    }: {
      key: string;
      taskId: string;
      tool: string;
      argsDigest?: string;
      receipt: ToolResult;
    }) {
      return guarded(`record applied intent ${key}`, async () => {
        const now = new Date().toISOString();
        const updated = await query(
          `UPDATE tollgate_intents SET state = 'committed', receipt = $2, committed_at = $3 WHERE key = $1 AND state = 'started'`,
          [key, JSON.stringify(receipt), now],
        );
        if (updated.rowCount === 1) return;
        await query(
          `INSERT INTO tollgate_intents (key, task_id, tool, call_id, state, receipt, started_at, committed_at, args_digest, owner)
           VALUES ($1, $2, $3, '', 'committed', $4, $5, $5, $6, $7) ON CONFLICT (key) DO NOTHING`,
          [key, taskId, tool, JSON.stringify(receipt), now, argsDigest ?? null, randomUUID()],
        );
      });
    },
    endLease({ key, owner }) {
      return guarded(
        `end the lease of intent ${key}`,
        async () =>
          (
            await query(`UPDATE tollgate_intents SET lease_until = ${NOW_MS} WHERE key = $1 AND owner = $2 AND state = 'started'`, [
              key,
              owner,
            ])
          ).rowCount === 1,
      );
    },
    release({ key, owner }) {
      return guarded(
        `release intent ${key}`,
        async () =>
          (await query(`DELETE FROM tollgate_intents WHERE key = $1 AND owner = $2 AND state = 'started'`, [key, owner])).rowCount === 1,
      );
    },
    listTask(taskId) {
      return guarded(`list the intents of task ${taskId}`, async () =>
        (await query('SELECT * FROM tollgate_intents WHERE task_id = $1 ORDER BY started_at, key', [taskId])).rows.map((row) =>
          recordFromRow(row)!,
        ),
      );
    },
    prune({ committedBefore }) {
      return guarded('prune committed intents', async () => {
        const before = committedBefore.toISOString();
        const deleted = await query(`DELETE FROM tollgate_intents WHERE state = 'committed' AND committed_at < $1`, [before]);
        const started = await pool.query<{ count: string }>(
          `SELECT count(*) AS count FROM tollgate_intents WHERE state = 'started' AND started_at < $1`,
          [before],
        );
        const contents = await pool.query('DELETE FROM tollgate_kept_contents WHERE kept_at < $1', [before]);
        const notifications = await pool.query('DELETE FROM tollgate_sent_notifications WHERE sent_at < $1', [before]);
        return {
          deleted: deleted.rowCount ?? 0,
          startedKept: Number(started.rows[0]!.count),
          contentsDeleted: contents.rowCount ?? 0,
          notificationsDeleted: notifications.rowCount ?? 0,
        };
      });
    },
    keepContent(content) {
      return guarded(`keep content ${content?.key}`, async () => {
        checkKeptContent(content);
        await pool.query(
          `INSERT INTO tollgate_kept_contents (key, task_id, digest, content, kept_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING`,
          [content.key, content.taskId, content.digest, content.content, new Date().toISOString()],
        );
      });
    },
    readContent(key) {
      return guarded(`read content ${key}`, async () => {
        const { rows } = await pool.query<{ key: string; task_id: string; digest: string; content: string }>(
          'SELECT key, task_id, digest, content FROM tollgate_kept_contents WHERE key = $1',
          [key],
        );
        const row = rows[0];
        return row && { key: row.key, taskId: row.task_id, digest: row.digest, content: row.content };
      });
    },
    notificationSent(id) {
      return guarded(`read sent notification ${id}`, async () =>
        sentNotificationFromRow(
          (await pool.query<SentNotificationRow>('SELECT * FROM tollgate_sent_notifications WHERE id = $1', [id])).rows[0],
        ),
      );
    },
    recordNotificationSent(sent) {
      try {
        checkSentNotification(sent);
      } catch (error) {
        return Promise.reject(error);
      }
      return guarded(`record sent notification ${sent.id}`, async () => {
        await pool.query(
          `INSERT INTO tollgate_sent_notifications (id, channel, workflow_id, call_id, kind, sent_at, attempts)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
          [sent.id, sent.channel, sent.workflowId, sent.callId, sent.kind, sent.sentAt, sent.attempts],
        );
      });
    },
    async close() {
      await ready?.catch(() => undefined);
      await pool.end();
    },
  };
}
