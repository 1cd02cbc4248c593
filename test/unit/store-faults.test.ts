import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLookupStatus } from '../../activities/boundary/lookup-status';
import { createResolveIntent } from '../../activities/boundary/resolve-intent';
import { createRunTool } from '../../activities/boundary/run-tool';
import Database from 'better-sqlite3';
import { INTENT_COLUMNS_SQL, IntentStoreError, type IdempotencyStore } from '../../intents/intent-store';
import { openPostgresStore } from '../../intents/postgres-store';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { ToolResult } from '../../common/contract/tools';
import { defineTool, type ToolDefinition, type ToolSpec } from '../../tools/define-tool';
import { intentKey } from '../../tools/intent-key';
import { createToolRegistry } from '../../tools/tool-registry';
import { postgresUrl } from '../helpers/postgres';
import { runToolOnce } from '../helpers/run-tool-once';

const opened: IdempotencyStore[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
});

const sqliteFile = () => path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-faults-')), 'intents.db');

/** The store's methods, each of which a faulty store below may make fail. */
type Method = Exclude<keyof IdempotencyStore, 'close'>;

/**
 * A real store behind a switch: while a method is set to fail, each call of it throws `thrown`
 * (before reaching the store, or after it, as a reply lost on the way back).
 */
function faultyStore(real: IdempotencyStore) {
  const failing = new Map<Method, { thrown: () => unknown; times: number; after: boolean }>();
  const calls: Record<string, number> = {};
  const store = Object.fromEntries(
    (['get', 'claim', 'commit', 'recordApplied', 'endLease', 'release', 'listTask', 'prune'] as const).map((method) => [
      method,
      async (argument: never) => {
        calls[method] = (calls[method] ?? 0) + 1;
        const fault = failing.get(method);
        if (fault && fault.times > 0) {
          fault.times--;
          if (fault.after) await (real[method] as (value: never) => Promise<unknown>)(argument);
          throw fault.thrown();
        }
        return (real[method] as (value: never) => Promise<unknown>)(argument);
      },
    ]),
  ) as unknown as IdempotencyStore;
  store.close = () => real.close();
  return {
    store,
    calls,
    /** Makes `method` fail its next `times` calls (Infinity: until healed). */
    fail(method: Method, { thrown = (): unknown => new Error('connection refused'), times = Infinity, after = false } = {}) {
      failing.set(method, { thrown, times, after });
    },
    heal(method: Method) {
      failing.delete(method);
    },
  };
}

/** A write that counts its real executions and keeps what it wrote, with a status check that reads it. */
function countedWrite(effect: 'reversible_write' | 'irreversible_write', { withStatus = effect === 'reversible_write' } = {}) {
  const written = new Map<string, number>();
  let executions = 0;
  const input = z.strictObject({ note: z.string().describe('the note') });
  // The effect is a parameter, so the spec is built from parts: defineTool checks at run time what the union checks at compile time.
  const tool: ToolDefinition = defineTool({
    name: effect === 'reversible_write' ? 'save_note' : 'send_note',
    description: 'writes a note',
    input,
    effect,
    timeout: 2_000,
    ...(withStatus
      ? { status: (args: { note: string }) => (written.has(args.note) ? ('applied' as const) : ('not_applied' as const)) }
      : {}),
    handler: async ({ note }: { note: string }) => {
      executions++;
      written.set(note, (written.get(note) ?? 0) + 1);
      return `wrote ${note}`;
    },
  } as ToolSpec<typeof input>);
  return { tool, written, executions: () => executions };
}

const thrownValues: Array<[string, () => unknown]> = [
  ['a plain Error', () => new Error('socket hang up')],
  ['a string', () => 'the database is on fire'],
  ['undefined', () => undefined],
  ['null', () => null],
  ['an object', () => ({ code: 57 })],
  ['a symbol', () => Symbol('gone')],
];

// Most of these tests wait out the store's retry window (STORE_FAULT_RETRY) on timers, once per failing
// call; each has its own store file, tools and boundary, so the concurrent ones wait at the same time.
describe.concurrent('a write whose idempotency store fails before the handler ran', () => {
  for (const effect of ['reversible_write', 'irreversible_write'] as const) {
    it(`${effect}: a claim that fails twice, then works, runs the handler once and commits (the store was back within the window)`, async () => {
      const faulty = faultyStore(openSqliteStore(sqliteFile()));
      opened.push(faulty.store);
      const { tool, executions } = countedWrite(effect);
      const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }), store: faulty.store });
      faulty.fail('claim', { times: 2 });
      const result = await runToolOnce(runTool, { taskId: 't1', callId: 'call-0-0', tool: tool.name, args: { note: 'a' } });
      expect(result).toMatchObject({ status: 'success', data: 'wrote a', executions: 1 });
      expect(executions()).toBe(1);
      expect(faulty.calls.claim).toBe(3);
      await expect(faulty.store.get(intentKey(tool, { note: 'a' }, 't1'))).resolves.toMatchObject({ state: 'committed' });
    });

    it(`${effect}: a store down for the whole window ends as not_run with 0 executions, never outcome_unknown`, async () => {
      const faulty = faultyStore(openSqliteStore(sqliteFile()));
      opened.push(faulty.store);
      const { tool, executions } = countedWrite(effect);
      const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }), store: faulty.store });
      faulty.fail('claim');
      const result = await runToolOnce(runTool, { taskId: 't2', callId: 'call-0-0', tool: tool.name, args: { note: 'b' } });
      expect(result).toMatchObject({ status: 'error', code: 'not_run', retryable: false, executions: 0, idempotency: 'store_failed' });
      expect(result.message).toMatch(/did not run, nothing happened: the idempotency store could not claim intent .*connection refused/);
      expect(executions()).toBe(0);
      expect(faulty.calls.claim).toBeGreaterThan(1);
      // Back again: the same call runs, once.
      faulty.heal('claim');
      await expect(runToolOnce(runTool, { taskId: 't2', callId: 'call-1-0', tool: tool.name, args: { note: 'b' } })).resolves.toMatchObject(
        {
          status: 'success',
          executions: 1,
        },
      );
      expect(executions()).toBe(1);
    });

    it(`${effect}: a claim recorded by the store whose answer was lost is found again by its own token; the handler runs once`, async () => {
      const faulty = faultyStore(openSqliteStore(sqliteFile()));
      opened.push(faulty.store);
      const { tool, executions } = countedWrite(effect);
      const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }), store: faulty.store });
      faulty.fail('claim', { times: 1, after: true, thrown: () => new Error('connection reset after the commit') });
      const result = await runToolOnce(runTool, { taskId: 't3', callId: 'call-0-0', tool: tool.name, args: { note: 'c' } });
      expect(result).toMatchObject({ status: 'success', executions: 1 });
      expect(executions()).toBe(1);
      await expect(faulty.store.get(intentKey(tool, { note: 'c' }, 't3'))).resolves.toMatchObject({ state: 'committed' });
    });
  }

  it('a claim answered with something that is not a claim result is a store fault: not_run, nothing ran', async () => {
    const real = openSqliteStore(sqliteFile());
    opened.push(real);
    const { tool, executions } = countedWrite('irreversible_write');
    for (const answer of [undefined, { claimed: true }, { claimed: 'yes', record: { state: 'started' } }, 'claimed']) {
      const store = { ...real, claim: async () => answer as never };
      const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }), store });
      const result = await runToolOnce(runTool, { taskId: 't4', callId: 'call-0-0', tool: tool.name, args: { note: 'd' } });
      expect(result, JSON.stringify(answer)).toMatchObject({ code: 'not_run', executions: 0 });
      expect(result.message).toMatch(/its answer is not a claim result/);
    }
    expect(executions()).toBe(0);
  });
});

describe.concurrent('a write whose idempotency store fails after the handler ran', () => {
  for (const effect of ['reversible_write', 'irreversible_write'] as const) {
    it(`${effect}: a failed commit keeps the handler's verdict and the intent started; the intent is never run again`, async () => {
      const faulty = faultyStore(openSqliteStore(sqliteFile()));
      opened.push(faulty.store);
      const { tool, executions, written } = countedWrite(effect);
      const registry = createToolRegistry({ tools: [tool] });
      const runTool = createRunTool({ registry, store: faulty.store });
      const lookupStatus = createLookupStatus({ registry, store: faulty.store });
      faulty.fail('commit');
      const first = await runToolOnce(runTool, { taskId: 't5', callId: 'call-0-0', tool: tool.name, args: { note: 'e' } });
      expect(first).toMatchObject({ status: 'success', executions: 1 });
      faulty.heal('commit');
      const key = intentKey(tool, { note: 'e' }, 't5');
      await expect(faulty.store.get(key)).resolves.toMatchObject({ state: 'started' });
      // The store cannot tell what happened: without a status check a lookup says unknown and another call does not run it;
      // with one, the check finds the write and answers for it.
      const lookup = await new MockActivityEnvironment().run(lookupStatus, {
        taskId: 't5',
        callId: 'call-1-0',
        tool: tool.name,
        args: { note: 'e' },
      });
      const again = await runToolOnce(runTool, { taskId: 't5', callId: 'call-1-0', tool: tool.name, args: { note: 'e' } });
      if (effect === 'irreversible_write') {
        expect(lookup).toMatchObject({ state: 'unknown' });
        expect(again).toMatchObject({ code: 'outcome_unknown', executions: 0 });
      } else {
        expect(lookup).toMatchObject({ state: 'applied', source: 'tool' });
        expect(again).toMatchObject({ status: 'success', executions: 0 });
      }
      expect(executions()).toBe(1);
      expect(written.get('e')).toBe(1);
    });
  }
});

describe.concurrent('an idempotency store that throws anything from any method', () => {
  for (const [name, thrown] of thrownValues) {
    it(`maps ${name} to a store fault: the claim to not_run, the commit to the handler's verdict, a lookup to unknown; nothing is thrown`, async () => {
      const faulty = faultyStore(openSqliteStore(sqliteFile()));
      opened.push(faulty.store);
      const reversible = countedWrite('reversible_write');
      const irreversible = countedWrite('irreversible_write');
      const registry = createToolRegistry({ tools: [reversible.tool, irreversible.tool] });
      const runTool = createRunTool({ registry, store: faulty.store });
      const lookupStatus = createLookupStatus({ registry, store: faulty.store });
      const taskId = `t6-${name}`;
      const call = (tool: ToolDefinition, note: string, callId = 'call-0-0') =>
        runToolOnce(runTool, { taskId, callId, tool: tool.name, args: { note } });
      const lookup = (tool: ToolDefinition, note: string) =>
        new MockActivityEnvironment().run(lookupStatus, { taskId, callId: 'call-9-0', tool: tool.name, args: { note } });

      faulty.fail('claim', { thrown });
      for (const { tool } of [reversible, irreversible])
        await expect(call(tool, 'claim')).resolves.toMatchObject({ code: 'not_run', executions: 0 });
      faulty.heal('claim');

      faulty.fail('get', { thrown });
      await expect(lookup(reversible.tool, 'get')).resolves.toMatchObject({
        state: 'unknown',
        reason: expect.stringMatching(/^the idempotency store could not read intent /),
      });
      faulty.heal('get');

      for (const method of ['commit', 'release', 'endLease', 'recordApplied'] as const) faulty.fail(method, { thrown });
      await expect(call(reversible.tool, 'commit')).resolves.toMatchObject({ status: 'success', executions: 1 });
      await expect(call(irreversible.tool, 'commit')).resolves.toMatchObject({ status: 'success', executions: 1 });
      // The status check finds the first write applied; the receipt it could not record costs nothing.
      await expect(call(reversible.tool, 'commit', 'call-1-0')).resolves.toMatchObject({ status: 'success', executions: 0 });
      await expect(lookup(reversible.tool, 'commit')).resolves.toMatchObject({ state: 'applied' });
      expect(reversible.executions() + irreversible.executions()).toBe(2);
    });
  }
});

describe.concurrent('a resolution whose idempotency store fails', () => {
  it('is answered unrecorded, whatever the store throws: the record stays started, nothing is thrown', async () => {
    const faulty = faultyStore(openSqliteStore(sqliteFile()));
    opened.push(faulty.store);
    const { tool } = countedWrite('irreversible_write');
    const registry = createToolRegistry({ tools: [tool] });
    const resolveIntent = createResolveIntent({ registry, store: faulty.store });
    const key = intentKey(tool, { note: 'r' }, 't7');
    await faulty.store.claim({
      key,
      taskId: 't7',
      tool: tool.name,
      callId: 'call-0-0',
      argsDigest: 'd',
      effect: 'irreversible_write',
      leaseMs: 0,
    });
    const resolve = (outcome: 'applied' | 'not_applied') =>
      new MockActivityEnvironment().run(resolveIntent, {
        taskId: 't7',
        callId: 'call-0-0',
        tool: tool.name,
        args: { note: 'r' },
        outcome,
        resolver: 'ops',
        ...(outcome === 'applied' ? { receipt: { status: 'success' as const, data: 'said so' } } : {}),
      });
    for (const [name, thrown] of thrownValues.slice(0, 3)) {
      faulty.fail('recordApplied', { thrown });
      await expect(resolve('applied'), name).resolves.toEqual({ key, store: 'unrecorded' });
      faulty.fail('release', { thrown });
      await expect(resolve('not_applied'), name).resolves.toEqual({ key, store: 'unrecorded' });
      await expect(faulty.store.get(key)).resolves.toMatchObject({ state: 'started' });
    }
    faulty.heal('release');
    await expect(resolve('not_applied')).resolves.toEqual({ key, store: 'released' });
  });
});

/** Each backend as a database: a function that opens one more store (one more worker) on the same database. */
const backends: Array<[string, () => () => IdempotencyStore]> = [
  [
    'sqlite',
    () => {
      const file = sqliteFile();
      return () => openSqliteStore(file, { inFlightGraceMs: 0 });
    },
  ],
  ['postgres', () => () => openPostgresStore(postgresUrl(), { inFlightGraceMs: 0 })],
];

describe.each(backends)('a late commit on the %s store', (_name, database) => {
  const open = database();
  const receipt = (by: string): ToolResult => ({ status: 'success', data: { by } });
  const unique = () => `late-${Date.now()}-${Math.random().toString(36).slice(2)}`;

  it('changes nothing when a newer claim holds the intent, and says so; the newer claim commits its own receipt', async () => {
    const store = open();
    opened.push(store);
    const key = unique();
    const claim = (callId: string) =>
      store.claim({ key, taskId: 'late', tool: 'save_note', callId, argsDigest: 'd', effect: 'reversible_write', leaseMs: 0 });
    const older = await claim('call-0-0');
    const newer = await claim('call-1-0');
    if (!older.claimed || !newer.claimed) throw new Error('expected both claims (the first lease was 0 ms)');
    expect(newer.replaced).toMatchObject({ owner: older.owner });
    await expect(store.commit({ key, owner: older.owner, receipt: receipt('older') })).resolves.toBe(false);
    await expect(store.get(key)).resolves.toMatchObject({ state: 'started', owner: newer.owner, callId: 'call-1-0' });
    await expect(store.release({ key, owner: older.owner })).resolves.toBe(false);
    await expect(store.endLease({ key, owner: older.owner })).resolves.toBe(false);
    await expect(store.commit({ key, owner: newer.owner, receipt: receipt('newer') })).resolves.toBe(true);
    await expect(store.commit({ key, owner: older.owner, receipt: receipt('older') })).resolves.toBe(false);
    await expect(store.get(key)).resolves.toMatchObject({ state: 'committed', owner: newer.owner, receipt: receipt('newer') });
  });

  it('gives a claim repeated with its own token its own record back, and never another claimant', async () => {
    const store = open();
    opened.push(store);
    const key = unique();
    const claim = (callId: string, owner: string) =>
      store.claim({
        key,
        taskId: 'late',
        tool: 'send_note',
        callId,
        argsDigest: 'd',
        effect: 'irreversible_write',
        leaseMs: 60_000,
        owner,
      });
    await expect(claim('call-0-0', 'token-a')).resolves.toMatchObject({ claimed: true, owner: 'token-a' });
    await expect(claim('call-0-0', 'token-a')).resolves.toMatchObject({ claimed: true, owner: 'token-a', record: { owner: 'token-a' } });
    await expect(claim('call-1-0', 'token-b')).resolves.toMatchObject({ claimed: false, record: { owner: 'token-a' } });
    await expect(
      store.claim({ key, taskId: 'late', tool: 'x', callId: 'c', argsDigest: 'd', effect: 'irreversible_write', leaseMs: 1, owner: '' }),
    ).rejects.toThrow('claim: owner (the claim token) must be a non-empty string when given');
  });

  it('two workers: the older attempt commits late, while the newer one runs; a lookup meanwhile still sees the newer attempt in flight', async () => {
    // Two stores on one database: two workers. The older attempt's handler is done before its lease ends, its commit is held back past it.
    const workerStores = [open(), open()];
    opened.push(...workerStores);
    let releaseOlderCommit!: () => void;
    const olderCommitMayGo = new Promise<void>((resolve) => (releaseOlderCommit = resolve));
    let olderCommitted: boolean | undefined;
    const olderStore: IdempotencyStore = {
      ...workerStores[0]!,
      commit: async (commit) => {
        await olderCommitMayGo;
        olderCommitted = await workerStores[0]!.commit(commit);
        return olderCommitted;
      },
    };
    let executions = 0;
    const applied = new Set<string>();
    let newerRunning!: () => void;
    const newerIsRunning = new Promise<void>((resolve) => (newerRunning = resolve));
    let olderDone!: () => void;
    const olderIsDone = new Promise<void>((resolve) => (olderDone = resolve));
    const tool = defineTool({
      name: 'save_note',
      description: 'writes a note',
      input: z.strictObject({ note: z.string().describe('the note') }),
      effect: 'reversible_write',
      timeout: 300,
      // The world forgets the older write (a cleanup), so the newer attempt's check lets it run.
      status: () => 'not_applied',
      handler: async ({ note }: { note: string }) => {
        executions++;
        if (executions === 2) {
          newerRunning();
          await olderIsDone;
        }
        applied.add(note);
        return `wrote ${note} (execution ${executions})`;
      },
    });
    const registry = createToolRegistry({ tools: [tool] });
    const taskId = unique();
    const input = (callId: string) => ({ taskId, callId, tool: 'save_note', args: { note: 'n' } });
    const older = runToolOnce(createRunTool({ registry, store: olderStore }), input('call-0-0'));
    // The older attempt's lease (its 300 ms timeout, no grace) runs out while its commit waits.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const newer = runToolOnce(createRunTool({ registry, store: workerStores[1]! }), input('call-1-0'));
    await newerIsRunning;
    releaseOlderCommit();
    await expect(older).resolves.toMatchObject({ status: 'success', executions: 1 });
    expect(olderCommitted).toBe(false);
    const key = intentKey(tool, { note: 'n' }, taskId);
    await expect(workerStores[1]!.get(key)).resolves.toMatchObject({ state: 'started', callId: 'call-1-0' });
    olderDone();
    await expect(newer).resolves.toMatchObject({ status: 'success', data: 'wrote n (execution 2)' });
    await expect(workerStores[1]!.get(key)).resolves.toMatchObject({
      state: 'committed',
      callId: 'call-1-0',
      receipt: { status: 'success', data: 'wrote n (execution 2)' },
    });
    expect(executions).toBe(2);
  });
});

describe('a SQLite store opened on a file of the first release (no effect, owner or lease columns)', () => {
  it('adds the columns, and a row of that file is never committed by a claim token nor claimed again', async () => {
    const file = sqliteFile();
    const old = new Database(file);
    old.exec(`CREATE TABLE intents (${INTENT_COLUMNS_SQL})`);
    old
      .prepare(
        `INSERT INTO intents (key, task_id, tool, call_id, state, started_at) VALUES ('old-key', 't', 'send_note', 'call-0-0', 'started', ?)`,
      )
      .run(new Date().toISOString());
    old.close();
    const store = openSqliteStore(file);
    opened.push(store);
    await expect(store.get('old-key')).resolves.toMatchObject({ state: 'started', effect: 'unknown' });
    const claimed = await store.claim({
      key: 'old-key',
      taskId: 't',
      tool: 'send_note',
      callId: 'call-1-0',
      argsDigest: 'd',
      effect: 'irreversible_write',
      leaseMs: 0,
    });
    expect(claimed).toMatchObject({ claimed: false, record: { state: 'started' } });
    await expect(store.commit({ key: 'old-key', owner: 'a-token', receipt: { status: 'success' } })).resolves.toBe(false);
    await expect(store.get('old-key')).resolves.toMatchObject({ state: 'started' });
  });
});

describe('IntentStoreError', () => {
  it('names the operation and the first line of whatever was thrown', () => {
    expect(new IntentStoreError('claim intent k', new Error('refused\nstack')).message).toBe(
      'the idempotency store could not claim intent k: refused',
    );
    expect(new IntentStoreError('read intent k', undefined).message).toBe(
      'the idempotency store could not read intent k: it threw undefined',
    );
    expect(new IntentStoreError('read intent k', { code: 57 }).message).toBe('the idempotency store could not read intent k: {"code":57}');
    expect(IntentStoreError.isInstance(new IntentStoreError('x', 'y'))).toBe(true);
    expect(IntentStoreError.isInstance(new Error('x'))).toBe(false);
  });
});
