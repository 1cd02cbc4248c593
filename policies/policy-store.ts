import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Mutex } from 'async-mutex';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Grant } from '../common/contract/decisions';
import type { TollgateConfig } from '../config/config-schema';
import { postgresUrl } from '../intents/open-store';
import { checkOut, POSTGRES_TIMEOUTS } from '../intents/postgres-store';
import type { RuleLimits } from './approval-rules';

// Where approval rules count what they approved (their caps) and where standing grants live: tables
// beside the intents, in the store the config names, so every worker sees the same counts and the
// same grants. Each use is decided in one transaction that holds the store's write lock (SQLite's
// BEGIN IMMEDIATE, a PostgreSQL advisory lock), so two workers never both take the last one.

/** A grant as it is first recorded. */
export interface NewGrant extends Omit<Grant, 'uses' | 'revokedAt' | 'revokedBy' | 'grantedAt' | 'expiresAt'> {
  taskId: string;
  grantedAtMs: number;
  expiresAtMs: number;
}

/** One use of a rule or a grant: the call it approves (a use asked for again by the same call is the same use). */
export interface UseRequest {
  workflowId: string;
  callId: string;
  taskId: string;
  /** The turn's clock, in milliseconds. */
  at: number;
  /** The value of a rule's amount argument in this call. */
  amount?: number;
}

/** Whether a use was taken, or why not. */
export type UseResult = { taken: true } | { taken: false; why: string };

/** What the policies keep in the store. */
export interface PolicyStore {
  /** Takes one use of a rule within its limits, atomically. */
  useRule(rule: { name: string; limits?: RuleLimits }, use: UseRequest): Promise<UseResult>;
  /** Takes one use of a grant while it is neither revoked, expired nor used up, atomically. */
  useGrant(grantId: string, use: UseRequest): Promise<UseResult>;
  /** Records a grant; recording the same id again returns the one recorded. */
  addGrant(grant: NewGrant): Promise<Grant>;
  /** The grants of a tool in these scopes that have not ended at `at`, oldest first. */
  activeGrants(query: { tool: string; scopeKeys: string[]; at: number }): Promise<Grant[]>;
  /** Every grant, newest first; ended ones (revoked, expired) only with `all`. */
  listGrants(query: { at: number; all?: boolean }): Promise<Grant[]>;
  /** Revokes a grant; its record after, or nothing when there is none. */
  revokeGrant(id: string, by: string, at: number): Promise<Grant | undefined>;
  close(): Promise<void>;
}

/** What the policy logic asks of a database: queries with `?` placeholders, run inside one locked transaction. */
interface Sql {
  all<T>(text: string, values?: unknown[]): Promise<T[]>;
  run(text: string, values?: unknown[]): Promise<number>;
}

interface Backend {
  /** Runs `work` in one transaction holding the policies' write lock. */
  locked<T>(work: (sql: Sql) => Promise<T>): Promise<T>;
  /** Queries outside a transaction. */
  sql: Sql;
  close(): Promise<void>;
}

const TABLES = [
  `CREATE TABLE IF NOT EXISTS tollgate_grants (
    id TEXT PRIMARY KEY, tool TEXT NOT NULL, condition TEXT, scope TEXT NOT NULL, scope_key TEXT NOT NULL,
    task_id TEXT NOT NULL, workflow_id TEXT NOT NULL, call_id TEXT NOT NULL, granted_by TEXT NOT NULL,
    granted_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, max_calls INTEGER, revoked_at BIGINT, revoked_by TEXT,
    key_id TEXT, signature TEXT)`,
  'CREATE INDEX IF NOT EXISTS tollgate_grants_by_scope ON tollgate_grants (tool, scope_key)',
  `CREATE TABLE IF NOT EXISTS tollgate_policy_uses (
    kind TEXT NOT NULL, name TEXT NOT NULL, workflow_id TEXT NOT NULL, call_id TEXT NOT NULL, task_id TEXT NOT NULL,
    amount DOUBLE PRECISION, at BIGINT NOT NULL, PRIMARY KEY (kind, name, workflow_id, call_id))`,
  'CREATE INDEX IF NOT EXISTS tollgate_policy_uses_by_task ON tollgate_policy_uses (kind, name, task_id)',
  'CREATE INDEX IF NOT EXISTS tollgate_policy_uses_by_time ON tollgate_policy_uses (kind, name, at)',
];

interface GrantRow {
  id: string;
  tool: string;
  condition: string | null;
  scope: string;
  scope_key: string;
  task_id: string;
  workflow_id: string;
  call_id: string;
  granted_by: string;
  granted_at: number | string;
  expires_at: number | string;
  max_calls: number | null;
  revoked_at: number | string | null;
  revoked_by: string | null;
  key_id: string | null;
  signature: string | null;
  uses: number | string;
}

const iso = (ms: number | string) => new Date(Number(ms)).toISOString();

function grantFromRow(row: GrantRow): Grant {
  return {
    id: row.id,
    tool: row.tool,
    ...(row.condition ? { when: JSON.parse(row.condition) as Record<string, unknown> } : {}),
    scope: row.scope === 'conversation' ? 'conversation' : 'task',
    scopeKey: row.scope_key,
    workflowId: row.workflow_id,
    callId: row.call_id,
    grantedBy: row.granted_by,
    grantedAt: iso(row.granted_at),
    expiresAt: iso(row.expires_at),
    ...(row.max_calls !== null ? { maxCalls: Number(row.max_calls) } : {}),
    uses: Number(row.uses),
    ...(row.revoked_at !== null ? { revokedAt: iso(row.revoked_at) } : {}),
    ...(row.revoked_by !== null ? { revokedBy: row.revoked_by } : {}),
    ...(row.key_id !== null ? { keyId: row.key_id } : {}),
    ...(row.signature !== null ? { signature: row.signature } : {}),
  };
}

const GRANT_SELECT = `SELECT g.*, (SELECT count(*) FROM tollgate_policy_uses u WHERE u.kind = 'grant' AND u.name = g.id) AS uses
  FROM tollgate_grants g`;

/** Why a grant approves nothing at `at`, or nothing when it still may. */
export function grantEnded(
  grant: Pick<Grant, 'id' | 'revokedAt' | 'revokedBy' | 'expiresAt' | 'maxCalls' | 'uses'>,
  at: number,
): string | undefined {
  if (grant.revokedAt) return `grant ${grant.id} was revoked${grant.revokedBy ? ` by ${grant.revokedBy}` : ''} at ${grant.revokedAt}`;
  if (Date.parse(grant.expiresAt) <= at) return `grant ${grant.id} expired at ${grant.expiresAt}`;
  if (grant.maxCalls !== undefined && grant.uses >= grant.maxCalls) return `grant ${grant.id} approved its ${grant.maxCalls} calls`;
  return undefined;
}

async function count(sql: Sql, where: string, values: unknown[], column = 'count(*)'): Promise<number> {
  const [row] = await sql.all<{ total: number | string | null }>(
    `SELECT ${column} AS total FROM tollgate_policy_uses WHERE ${where}`,
    values,
  );
  return Number(row?.total ?? 0);
}

/** Why a rule's limits do not allow one more use, or nothing. */
async function ruleCapped(sql: Sql, name: string, limits: RuleLimits, use: UseRequest): Promise<string | undefined> {
  const mine = `kind = 'rule' AND name = ?`;
  if (limits.perTask !== undefined && (await count(sql, `${mine} AND task_id = ?`, [name, use.taskId])) >= limits.perTask)
    return `rule ${name} approved its ${limits.perTask} calls for task ${use.taskId}`;
  if (limits.perWindow) {
    const since = use.at - limits.perWindow.windowMs;
    if ((await count(sql, `${mine} AND at > ?`, [name, since])) >= limits.perWindow.calls)
      return `rule ${name} approved its ${limits.perWindow.calls} calls in ${limits.perWindow.windowMs / 1000} s`;
  }
  const amount = use.amount ?? 0;
  if (limits.amountPerTask !== undefined) {
    const sum = await count(sql, `${mine} AND task_id = ?`, [name, use.taskId], 'sum(amount)');
    if (sum + amount > limits.amountPerTask)
      return `rule ${name} approves at most ${limits.amountPerTask} per task; ${sum} approved, this call asks ${amount}`;
  }
  if (limits.amountPerWindow) {
    const sum = await count(sql, `${mine} AND at > ?`, [name, use.at - limits.amountPerWindow.windowMs], 'sum(amount)');
    if (sum + amount > limits.amountPerWindow.max)
      return `rule ${name} approves at most ${limits.amountPerWindow.max} per ${limits.amountPerWindow.windowMs / 1000} s; ${sum} approved, this call asks ${amount}`;
  }
  return undefined;
}

async function alreadyUsed(sql: Sql, kind: 'rule' | 'grant', name: string, use: UseRequest): Promise<boolean> {
  const rows = await sql.all(`SELECT 1 AS used FROM tollgate_policy_uses WHERE kind = ? AND name = ? AND workflow_id = ? AND call_id = ?`, [
    kind,
    name,
    use.workflowId,
    use.callId,
  ]);
  return rows.length > 0;
}

async function recordUse(sql: Sql, kind: 'rule' | 'grant', name: string, use: UseRequest): Promise<void> {
  await sql.run(`INSERT INTO tollgate_policy_uses (kind, name, workflow_id, call_id, task_id, amount, at) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
    kind,
    name,
    use.workflowId,
    use.callId,
    use.taskId,
    use.amount ?? null,
    use.at,
  ]);
}

/** The policy logic over one backend (SQLite or PostgreSQL). */
function policyStore(backend: Backend): PolicyStore {
  const grantById = async (sql: Sql, id: string) => {
    const [row] = await sql.all<GrantRow>(`${GRANT_SELECT} WHERE g.id = ?`, [id]);
    return row ? grantFromRow(row) : undefined;
  };
  return {
    useRule: (rule, use) =>
      backend.locked(async (sql) => {
        if (await alreadyUsed(sql, 'rule', rule.name, use)) return { taken: true };
        const why = rule.limits ? await ruleCapped(sql, rule.name, rule.limits, use) : undefined;
        if (why) return { taken: false, why };
        await recordUse(sql, 'rule', rule.name, use);
        return { taken: true };
      }),
    useGrant: (grantId, use) =>
      backend.locked(async (sql) => {
        if (await alreadyUsed(sql, 'grant', grantId, use)) return { taken: true };
        const grant = await grantById(sql, grantId);
        if (!grant) return { taken: false, why: `grant ${grantId} does not exist` };
        const why = grantEnded(grant, use.at);
        if (why) return { taken: false, why };
        await recordUse(sql, 'grant', grantId, use);
        return { taken: true };
      }),
    addGrant: (grant) =>
      backend.locked(async (sql) => {
        await sql.run(
          `INSERT INTO tollgate_grants (id, tool, condition, scope, scope_key, task_id, workflow_id, call_id, granted_by, granted_at,
             expires_at, max_calls, key_id, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
          [
            grant.id,
            grant.tool,
            grant.when === undefined ? null : JSON.stringify(grant.when),
            grant.scope,
            grant.scopeKey,
            grant.taskId,
            grant.workflowId,
            grant.callId,
            grant.grantedBy,
            grant.grantedAtMs,
            grant.expiresAtMs,
            grant.maxCalls ?? null,
            grant.keyId ?? null,
            grant.signature ?? null,
          ],
        );
        return (await grantById(sql, grant.id))!;
      }),
    async activeGrants({ tool, scopeKeys, at }) {
      if (scopeKeys.length === 0) return [];
      const rows = await backend.sql.all<GrantRow>(
        `${GRANT_SELECT} WHERE g.tool = ? AND g.scope_key IN (${scopeKeys.map(() => '?').join(', ')})
           AND g.revoked_at IS NULL AND g.expires_at > ? ORDER BY g.granted_at, g.id`,
        [tool, ...scopeKeys, at],
      );
      return rows.map(grantFromRow).filter((grant) => grantEnded(grant, at) === undefined);
    },
    async listGrants({ at, all }) {
      const ended = all ? '' : ' WHERE g.revoked_at IS NULL AND g.expires_at > ?';
      const rows = await backend.sql.all<GrantRow>(`${GRANT_SELECT}${ended} ORDER BY g.granted_at DESC, g.id`, all ? [] : [at]);
      return rows.map(grantFromRow).filter((grant) => all || grantEnded(grant, at) === undefined);
    },
    revokeGrant: (id, by, at) =>
      backend.locked(async (sql) => {
        await sql.run('UPDATE tollgate_grants SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL', [at, by, id]);
        return grantById(sql, id);
      }),
    close: () => backend.close(),
  };
}

/** The lock of each SQLite file this process opened policies on. */
const FILE_LOCKS = new Map<string | symbol, Mutex>();

/** The policies on the SQLite file of the embedded store (several processes on one machine share it through SQLite's lock). */
export function openSqlitePolicyStore(file: string): PolicyStore {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  for (const statement of TABLES) db.exec(statement);
  // One transaction at a time per file in this process (SQLite's busy wait would block the thread
  // that must finish the other one); other processes wait on SQLite's write lock.
  const key = file === ':memory:' ? Symbol('memory') : path.resolve(file);
  const mutex = FILE_LOCKS.get(key) ?? new Mutex();
  FILE_LOCKS.set(key, mutex);
  const sql: Sql = {
    all: async <T>(text: string, values: unknown[] = []) => db.prepare(text).all(...values) as T[],
    run: async (text, values = []) => db.prepare(text).run(...values).changes,
  };
  return policyStore({
    sql,
    locked: (work) =>
      mutex.runExclusive(async () => {
        db.exec('BEGIN IMMEDIATE');
        try {
          const result = await work(sql);
          db.exec('COMMIT');
          return result;
        } catch (error) {
          db.exec('ROLLBACK');
          throw error;
        }
      }),
    close: async () => void db.close(),
  });
}

/** `?` placeholders as PostgreSQL's `$1, $2, …`. */
function numbered(text: string): string {
  let index = 0;
  return text.replace(/\?/g, () => `$${++index}`);
}

/** The policies on PostgreSQL, for workers on several machines; the tables are made on first use. */
export function openPostgresPolicyStore(connectionString: string): PolicyStore {
  const pool = new pg.Pool({
    connectionString,
    max: 4,
    connectionTimeoutMillis: POSTGRES_TIMEOUTS.connectMs,
    query_timeout: POSTGRES_TIMEOUTS.queryMs,
    allowExitOnIdle: true,
  });
  pool.on('error', () => undefined);
  const on = (client: pg.Pool | pg.PoolClient): Sql => ({
    all: async <T>(text: string, values: unknown[] = []) => (await client.query(numbered(text), values)).rows as T[],
    run: async (text, values = []) => (await client.query(numbered(text), values)).rowCount ?? 0,
  });
  const inTransaction = async <T>(work: (sql: Sql) => Promise<T>): Promise<T> => {
    const client = await checkOut(pool);
    try {
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('tollgate_policies'))`);
      const result = await work(on(client));
      await client.query('COMMIT');
      client.release();
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release(true);
      throw error;
    }
  };
  let ready: Promise<void> | undefined;
  const setup = () =>
    (ready ??= inTransaction(async (sql) => {
      for (const statement of TABLES) await sql.run(statement);
    }).catch((error: unknown) => {
      ready = undefined;
      throw error;
    }));
  const plain = on(pool);
  return policyStore({
    sql: {
      all: async (text, values) => (await setup(), plain.all(text, values)),
      run: async (text, values) => (await setup(), plain.run(text, values)),
    },
    locked: async (work) => (await setup(), inTransaction(work)),
    close: () => pool.end(),
  });
}

/** The policy store beside the idempotency store the config names. */
export function openPolicyStore(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): PolicyStore {
  return config.store.backend === 'sqlite'
    ? openSqlitePolicyStore(config.store.sqliteFile)
    : openPostgresPolicyStore(postgresUrl(config, env));
}
