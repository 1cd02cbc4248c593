import { mkdirSync } from 'node:fs';
import path from 'node:path';
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

/** One query of the policy logic: `?` placeholders, all rows or the count of rows changed. */
interface Query {
  kind: 'all' | 'run';
  text: string;
  values: unknown[];
}

/**
 * The policy logic's steps: it yields each query and is given its answer. The same steps run
 * synchronously inside one SQLite transaction (nothing else runs on the thread meanwhile) and
 * asynchronously inside one PostgreSQL transaction.
 */
type Steps<T> = Generator<Query, T, unknown>;

const sql = {
  *all<T>(text: string, values: unknown[] = []): Steps<T[]> {
    return (yield { kind: 'all', text, values }) as T[];
  },
  *run(text: string, values: unknown[] = []): Steps<number> {
    return (yield { kind: 'run', text, values }) as number;
  },
};

interface Backend {
  /** Runs the steps in one transaction holding the policies' write lock. */
  locked<T>(steps: () => Steps<T>): Promise<T>;
  /** Runs reading steps outside a transaction. */
  read<T>(steps: () => Steps<T>): Promise<T>;
  close(): Promise<void>;
}

/** Runs steps with each query answered at once. */
function runSteps<T>(steps: Steps<T>, answer: (query: Query) => unknown): T {
  let next = steps.next();
  while (!next.done) next = steps.next(answer(next.value));
  return next.value;
}

/** Runs steps with each query answered when its promise settles. */
async function awaitSteps<T>(steps: Steps<T>, answer: (query: Query) => Promise<unknown>): Promise<T> {
  let next = steps.next();
  while (!next.done) next = steps.next(await answer(next.value));
  return next.value;
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

function* count(where: string, values: unknown[], column = 'count(*)'): Steps<number> {
  const [row] = yield* sql.all<{ total: number | string | null }>(
    `SELECT ${column} AS total FROM tollgate_policy_uses WHERE ${where}`,
    values,
  );
  return Number(row?.total ?? 0);
}

/** Why a rule's limits do not allow one more use, or nothing. */
function* ruleCapped(name: string, limits: RuleLimits, use: UseRequest): Steps<string | undefined> {
  const mine = `kind = 'rule' AND name = ?`;
  if (limits.perTask !== undefined && (yield* count(`${mine} AND task_id = ?`, [name, use.taskId])) >= limits.perTask)
    return `rule ${name} approved its ${limits.perTask} calls for task ${use.taskId}`;
  if (limits.perWindow) {
    const since = use.at - limits.perWindow.windowMs;
    if ((yield* count(`${mine} AND at > ?`, [name, since])) >= limits.perWindow.calls)
      return `rule ${name} approved its ${limits.perWindow.calls} calls in ${limits.perWindow.windowMs / 1000} s`;
  }
  const amount = use.amount ?? 0;
  if (limits.amountPerTask !== undefined) {
    const sum = yield* count(`${mine} AND task_id = ?`, [name, use.taskId], 'sum(amount)');
    if (sum + amount > limits.amountPerTask)
      return `rule ${name} approves at most ${limits.amountPerTask} per task; ${sum} approved, this call asks ${amount}`;
  }
  if (limits.amountPerWindow) {
    const sum = yield* count(`${mine} AND at > ?`, [name, use.at - limits.amountPerWindow.windowMs], 'sum(amount)');
    if (sum + amount > limits.amountPerWindow.max)
      return `rule ${name} approves at most ${limits.amountPerWindow.max} per ${limits.amountPerWindow.windowMs / 1000} s; ${sum} approved, this call asks ${amount}`;
  }
  return undefined;
}

function* alreadyUsed(kind: 'rule' | 'grant', name: string, use: UseRequest): Steps<boolean> {
  const rows = yield* sql.all(
    `SELECT 1 AS used FROM tollgate_policy_uses WHERE kind = ? AND name = ? AND workflow_id = ? AND call_id = ?`,
    [kind, name, use.workflowId, use.callId],
  );
  return rows.length > 0;
}

function* recordUse(kind: 'rule' | 'grant', name: string, use: UseRequest): Steps<void> {
  yield* sql.run(`INSERT INTO tollgate_policy_uses (kind, name, workflow_id, call_id, task_id, amount, at) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
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
  function* grantById(id: string): Steps<Grant | undefined> {
    const [row] = yield* sql.all<GrantRow>(`${GRANT_SELECT} WHERE g.id = ?`, [id]);
    return row ? grantFromRow(row) : undefined;
  }
  return {
    useRule: (rule, use) =>
      backend.locked(function* () {
        if (yield* alreadyUsed('rule', rule.name, use)) return { taken: true };
        const why = rule.limits ? yield* ruleCapped(rule.name, rule.limits, use) : undefined;
        if (why) return { taken: false, why };
        yield* recordUse('rule', rule.name, use);
        return { taken: true };
      }),
    useGrant: (grantId, use) =>
      backend.locked(function* () {
        if (yield* alreadyUsed('grant', grantId, use)) return { taken: true };
        const grant = yield* grantById(grantId);
        if (!grant) return { taken: false, why: `grant ${grantId} does not exist` };
        const why = grantEnded(grant, use.at);
        if (why) return { taken: false, why };
        yield* recordUse('grant', grantId, use);
        return { taken: true };
      }),
    addGrant: (grant) =>
      backend.locked(function* () {
        yield* sql.run(
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
        return (yield* grantById(grant.id))!;
      }),
    async activeGrants({ tool, scopeKeys, at }) {
      if (scopeKeys.length === 0) return [];
      const rows = await backend.read(() =>
        sql.all<GrantRow>(
          `${GRANT_SELECT} WHERE g.tool = ? AND g.scope_key IN (${scopeKeys.map(() => '?').join(', ')})
           AND g.revoked_at IS NULL AND g.expires_at > ? ORDER BY g.granted_at, g.id`,
          [tool, ...scopeKeys, at],
        ),
      );
      return rows.map(grantFromRow).filter((grant) => grantEnded(grant, at) === undefined);
    },
    async listGrants({ at, all }) {
      const ended = all ? '' : ' WHERE g.revoked_at IS NULL AND g.expires_at > ?';
      const rows = await backend.read(() => sql.all<GrantRow>(`${GRANT_SELECT}${ended} ORDER BY g.granted_at DESC, g.id`, all ? [] : [at]));
      return rows.map(grantFromRow).filter((grant) => all || grantEnded(grant, at) === undefined);
    },
    revokeGrant: (id, by, at) =>
      backend.locked(function* () {
        yield* sql.run('UPDATE tollgate_grants SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL', [at, by, id]);
        return yield* grantById(id);
      }),
    close: () => backend.close(),
  };
}

/** The policies on the SQLite file of the embedded store (several processes on one machine share it through SQLite's lock). */
export function openSqlitePolicyStore(file: string): PolicyStore {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  for (const statement of TABLES) db.exec(statement);
  // The queries are a fixed set: each is prepared once.
  const statements = new Map<string, Database.Statement>();
  const prepared = (text: string) => statements.get(text) ?? statements.set(text, db.prepare(text)).get(text)!;
  const answer = ({ kind, text, values }: Query) =>
    kind === 'all' ? prepared(text).all(...values) : prepared(text).run(...values).changes;
  return policyStore({
    // BEGIN IMMEDIATE takes the file's write lock first, so claimants in other processes wait for it.
    locked: async (steps) => db.transaction(() => runSteps(steps(), answer)).immediate(),
    read: async (steps) => runSteps(steps(), answer),
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
  const on =
    (client: pg.Pool | pg.PoolClient) =>
    async ({ kind, text, values }: Query): Promise<unknown> => {
      const result = await client.query(numbered(text), values);
      return kind === 'all' ? result.rows : (result.rowCount ?? 0);
    };
  const inTransaction = async <T>(steps: () => Steps<T>): Promise<T> => {
    const client = await checkOut(pool);
    try {
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('tollgate_policies'))`);
      const result = await awaitSteps(steps(), on(client));
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
    (ready ??= inTransaction(function* (): Steps<void> {
      for (const statement of TABLES) yield* sql.run(statement);
    }).catch((error: unknown) => {
      ready = undefined;
      throw error;
    }));
  return policyStore({
    read: async (steps) => (await setup(), awaitSteps(steps(), on(pool))),
    locked: async (steps) => (await setup(), inTransaction(steps)),
    close: () => pool.end(),
  });
}

/** The policy store beside the idempotency store the config names. */
export function openPolicyStore(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): PolicyStore {
  return config.store.backend === 'sqlite'
    ? openSqlitePolicyStore(config.store.sqliteFile)
    : openPostgresPolicyStore(postgresUrl(config, env));
}
