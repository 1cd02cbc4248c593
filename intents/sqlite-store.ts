import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
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
  type KeptContent,
  type SentNotificationRow,
} from './intent-store';

/**
 * The embedded store: one SQLite file (WAL), safe for several workers on one machine. A claim runs
 * in one `BEGIN IMMEDIATE` transaction, which holds the file's write lock from its first read, so
 * claimants in other processes are serialized by SQLite itself.
 */
export function openSqliteStore(file: string, { inFlightGraceMs = DEFAULT_IN_FLIGHT_GRACE_MS }: IntentStoreOptions = {}): IdempotencyStore {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.exec(`CREATE TABLE IF NOT EXISTS intents (${INTENT_COLUMNS_SQL})`);
  const present = new Set((db.pragma('table_info(intents)') as Array<{ name: string }>).map((column) => column.name));
  for (const column of ADDED_COLUMNS)
    if (!present.has(column.name)) db.exec(`ALTER TABLE intents ADD COLUMN ${column.name} ${column.sqliteType}`);
  db.exec('CREATE INDEX IF NOT EXISTS intents_by_task ON intents (task_id, started_at)');
  db.exec('CREATE INDEX IF NOT EXISTS intents_by_commit ON intents (state, committed_at)');
  db.exec(`CREATE TABLE IF NOT EXISTS kept_contents (${CONTENT_COLUMNS_SQL})`);
  db.exec('CREATE INDEX IF NOT EXISTS kept_contents_by_time ON kept_contents (kept_at)');
  db.exec(`CREATE TABLE IF NOT EXISTS sent_notifications (${NOTIFICATION_COLUMNS_SQL})`);
  db.exec('CREATE INDEX IF NOT EXISTS sent_notifications_by_time ON sent_notifications (sent_at)');

  const select = db.prepare<[string], IntentRow>('SELECT * FROM intents WHERE key = ?');
  const insertStarted = db.prepare(
    `INSERT INTO intents (key, task_id, tool, call_id, state, started_at, effect, args_digest, owner, lease_until)
     VALUES (@key, @taskId, @tool, @callId, 'started', @now, @effect, @argsDigest, @owner, @leaseUntil)
     ON CONFLICT (key) DO NOTHING`,
  );
  const takeOver = db.prepare(
    `UPDATE intents SET task_id = @taskId, tool = @tool, call_id = @callId, state = 'started', receipt = NULL, committed_at = NULL,
       started_at = @now, effect = @effect, args_digest = @argsDigest, owner = @owner, lease_until = @leaseUntil
     WHERE key = @key AND owner IS @previousOwner AND state = @previousState`,
  );
  const commitOwn = db.prepare(
    `UPDATE intents SET state = 'committed', receipt = @receipt, committed_at = @now WHERE key = @key AND owner = @owner AND state = 'started'`,
  );
  const commitAny = db.prepare(
    `UPDATE intents SET state = 'committed', receipt = @receipt, committed_at = @now WHERE key = @key AND state = 'started'`,
  );
  const insertCommitted = db.prepare(
    `INSERT INTO intents (key, task_id, tool, call_id, state, receipt, started_at, committed_at, args_digest, owner)
     VALUES (@key, @taskId, @tool, '', 'committed', @receipt, @now, @now, @argsDigest, @owner)
     ON CONFLICT (key) DO NOTHING`,
  );
  const endLease = db.prepare(`UPDATE intents SET lease_until = @now WHERE key = @key AND owner = @owner AND state = 'started'`);
  const remove = db.prepare(`DELETE FROM intents WHERE key = @key AND owner = @owner AND state = 'started'`);
  const byTask = db.prepare<[string], IntentRow>('SELECT * FROM intents WHERE task_id = ? ORDER BY started_at, key');
  const pruneCommitted = db.prepare(`DELETE FROM intents WHERE state = 'committed' AND committed_at < ?`);
  const insertContent = db.prepare(
    `INSERT INTO kept_contents (key, task_id, digest, content, kept_at) VALUES (@key, @taskId, @digest, @content, @now) ON CONFLICT (key) DO NOTHING`,
  );
  const selectContent = db.prepare<[string], { key: string; task_id: string; digest: string; content: string }>(
    'SELECT key, task_id, digest, content FROM kept_contents WHERE key = ?',
  );
  const pruneContents = db.prepare('DELETE FROM kept_contents WHERE kept_at < ?');
  const selectNotification = db.prepare<[string], SentNotificationRow>('SELECT * FROM sent_notifications WHERE id = ?');
  const insertNotification = db.prepare(
    `INSERT INTO sent_notifications (id, channel, workflow_id, call_id, kind, sent_at, attempts)
     VALUES (@id, @channel, @workflowId, @callId, @kind, @sentAt, @attempts) ON CONFLICT (id) DO NOTHING`,
  );
  const pruneNotifications = db.prepare('DELETE FROM sent_notifications WHERE sent_at < ?');
  const countOldStarted = db.prepare<[string], { count: number }>(
    `SELECT count(*) AS count FROM intents WHERE state = 'started' AND started_at < ?`,
  );

  /** Decides, inside the write lock, whether this claimant owns the attempt. */
  const claimLocked = db.transaction((request: ClaimRequest, now: number): ClaimResult => {
    const owner = request.owner ?? randomUUID();
    const values = {
      key: request.key,
      taskId: request.taskId,
      tool: request.tool,
      callId: request.callId,
      effect: request.effect,
      argsDigest: request.argsDigest,
      owner,
      now: new Date(now).toISOString(),
      leaseUntil: now + request.leaseMs + inFlightGraceMs,
    };
    if (insertStarted.run(values).changes === 1) return { claimed: true, owner, record: recordFromRow(select.get(request.key))! };
    const existing = select.get(request.key)!;
    const record = recordFromRow(existing)!;
    const decision = claimDecision(existing, request, now);
    if (decision === 'own') return { claimed: true, owner, record };
    if (decision === 'refuse') return { claimed: false, record };
    takeOver.run({ ...values, previousOwner: existing.owner, previousState: existing.state });
    return { claimed: true, owner, record: recordFromRow(select.get(request.key))!, replaced: record };
  });

  const guarded = <T>(operation: string, work: () => T): Promise<T> => {
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(error instanceof TypeError ? error : new IntentStoreError(operation, error));
    }
  };

  return {
    get(key) {
      return guarded(`read intent ${key}`, () => recordFromRow(select.get(key)));
    },
    claim(request) {
      return guarded(`claim intent ${request?.key}`, () => {
        checkClaimRequest(request);
        return claimLocked.immediate(request, Date.now());
      });
    },
    commit({ key, owner, receipt }) {
      return guarded(`commit intent ${key}`, () => {
        const values = {
          key,
          owner,
          receipt: JSON.stringify(receipt),
          now: new Date().toISOString(),
          taskId: '',
          tool: '',
          argsDigest: null,
        };
        // One transaction: the record cannot be claimed by someone else between the two statements.
        return db.transaction(() => commitOwn.run(values).changes === 1 || insertCommitted.run(values).changes === 1).immediate();
      });
    },
    recordApplied({ key, taskId, tool, argsDigest, receipt }) {
      return guarded(`record applied intent ${key}`, () => {
        const values = {
          key,
          owner: randomUUID(),
          receipt: JSON.stringify(receipt),
          now: new Date().toISOString(),
          taskId,
          tool,
          argsDigest: argsDigest ?? null,
        };
        if (commitAny.run(values).changes === 0) insertCommitted.run(values);
      });
    },
    endLease({ key, owner }) {
      return guarded(`end the lease of intent ${key}`, () => endLease.run({ key, owner, now: Date.now() }).changes === 1);
    },
    release({ key, owner }) {
      return guarded(`release intent ${key}`, () => remove.run({ key, owner }).changes === 1);
    },
    listTask(taskId) {
      return guarded(`list the intents of task ${taskId}`, () => byTask.all(taskId).map((row) => recordFromRow(row)!));
    },
    prune({ committedBefore }) {
      return guarded('prune committed intents', () => {
        const before = committedBefore.toISOString();
        return {
          deleted: pruneCommitted.run(before).changes,
          startedKept: countOldStarted.get(before)!.count,
          contentsDeleted: pruneContents.run(before).changes,
          notificationsDeleted: pruneNotifications.run(before).changes,
        };
      });
    },
    keepContent(content) {
      return guarded(`keep content ${content?.key}`, () => {
        checkKeptContent(content);
        insertContent.run({ ...content, now: new Date().toISOString() });
      });
    },
    readContent(key) {
      return guarded(`read content ${key}`, (): KeptContent | undefined => {
        const row = selectContent.get(key);
        return row && { key: row.key, taskId: row.task_id, digest: row.digest, content: row.content };
      });
    },
    notificationSent(id) {
      return guarded(`read sent notification ${id}`, () => sentNotificationFromRow(selectNotification.get(id)));
    },
    recordNotificationSent(sent) {
      return guarded(`record sent notification ${sent?.id}`, () => {
        checkSentNotification(sent);
        insertNotification.run(sent);
      });
    },
    async close() {
      db.close();
    },
  };
}
