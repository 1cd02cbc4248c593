import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../tools/define-tool';
import { openConfiguredStore } from '../../intents/open-store';
import { intentKey } from '../../tools/intent-key';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { IdempotencyStore } from '../../intents/intent-store';
import { createLookupStatus } from '../../activities/boundary/lookup-status';
import { openPostgresStore } from '../../intents/postgres-store';
import { createRunTool } from '../../activities/boundary/run-tool';
import { createToolRegistry } from '../../tools/tool-registry';
import { saveDraftTool } from '../../tools/built-in/save-draft';
import { sendMessageTool } from '../../tools/built-in/send-message';
import type { ToolResult } from '../../common/contract/tools';
import { testConfig } from '../helpers/test-config';
import { postgresUrl } from '../helpers/postgres';
import { runToolOnce, type FlatBoundaryResult } from '../helpers/run-tool-once';

const opened: IdempotencyStore[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
});

const backends: Array<[string, () => IdempotencyStore]> = [
  ['sqlite', () => openSqliteStore(path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-store-')), 'intents.db'))],
  ['postgres', () => openPostgresStore(postgresUrl())],
];

describe.each(backends)('the %s idempotency store', (_name, open) => {
  const store = open();
  opened.push(store);
  const unique = () => `key-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const receipt: ToolResult = { status: 'success', data: { path: 'drafts/a.md' } };

  const claimOf = (
    key: string,
    callId: string,
    effect: 'reversible_write' | 'irreversible_write' = 'irreversible_write',
    leaseMs = 60_000,
  ) => store.claim({ key, taskId: 't', tool: 'save_draft', callId, argsDigest: 'digest', effect, leaseMs });

  it('lets exactly one of many concurrent claimants own an intent, and never lets a claim overwrite a commit', async () => {
    const key = unique();
    await expect(store.get(key)).resolves.toBeUndefined();
    const claims = await Promise.all(Array.from({ length: 8 }, (_, index) => claimOf(key, `call-${index}-0`)));
    const winners = claims.filter((claim) => claim.claimed);
    expect(winners).toHaveLength(1);
    const owner = winners[0]!.claimed ? winners[0]!.owner : '';
    await expect(claimOf(key, 'call-9-0')).resolves.toMatchObject({ claimed: false, record: { state: 'started', owner } });
    await expect(store.commit({ key, owner, receipt })).resolves.toBe(true);
    await expect(claimOf(key, 'call-10-0')).resolves.toMatchObject({ claimed: false, record: { state: 'committed', receipt } });
    await expect(store.listTask('t')).resolves.toEqual(expect.arrayContaining([expect.objectContaining({ key, state: 'committed' })]));
  });

  it('lets a reversible intent be claimed again only after its lease expired, and an irreversible one never', async () => {
    const reversible = unique();
    const first = await claimOf(reversible, 'call-0-0', 'reversible_write', 0);
    expect(first.claimed).toBe(true);
    await expect(claimOf(reversible, 'call-1-0', 'reversible_write', 0)).resolves.toMatchObject({ claimed: false });
    if (!first.claimed) return;
    await store.endLease({ key: reversible, owner: first.owner });
    await expect(claimOf(reversible, 'call-2-0', 'reversible_write', 0)).resolves.toMatchObject({
      claimed: true,
      replaced: { callId: 'call-0-0' },
    });
    const irreversible = unique();
    const sent = await claimOf(irreversible, 'call-0-0', 'irreversible_write', 0);
    if (sent.claimed) await store.endLease({ key: irreversible, owner: sent.owner });
    await expect(claimOf(irreversible, 'call-1-0', 'irreversible_write', 0)).resolves.toMatchObject({
      claimed: false,
      record: { state: 'started' },
    });
  });

  it('releases only its own started attempt, and prunes only old committed intents', async () => {
    const started = unique();
    const claim = await claimOf(started, 'c');
    if (!claim.claimed) throw new Error('expected the claim');
    await expect(store.release({ key: started, owner: 'someone-else' })).resolves.toBe(false);
    await expect(store.release({ key: started, owner: claim.owner })).resolves.toBe(true);
    await expect(store.get(started)).resolves.toBeUndefined();
    const committed = unique();
    const again = await claimOf(committed, 'c');
    if (again.claimed) await store.commit({ key: committed, owner: again.owner, receipt });
    const old = unique();
    await claimOf(old, 'c');
    const report = await store.prune({ committedBefore: new Date(Date.now() + 60_000) });
    expect(report.deleted).toBeGreaterThanOrEqual(1);
    expect(report.startedKept).toBeGreaterThanOrEqual(1);
    await expect(store.get(committed)).resolves.toBeUndefined();
    await expect(store.get(old)).resolves.toMatchObject({ state: 'started' });
  });

  it('keeps a content once under its key (a second write keeps the first), reads it back, refuses a bad one and prunes old ones', async () => {
    const key = `${unique()}/call-1-0/d1`;
    await store.keepContent!({ key, taskId: 't', digest: 'd1', content: '{"status":"success","data":"first"}' });
    await store.keepContent!({ key, taskId: 't', digest: 'd1', content: '{"status":"success","data":"second"}' });
    await expect(store.readContent!(key)).resolves.toEqual({
      key,
      taskId: 't',
      digest: 'd1',
      content: '{"status":"success","data":"first"}',
    });
    await expect(store.readContent!(`${key}-absent`)).resolves.toBeUndefined();
    await expect(store.keepContent!({ key: '', taskId: 't', digest: 'd', content: 'x' })).rejects.toThrow(
      'keepContent: key must be a non-empty string',
    );
    const report = await store.prune({ committedBefore: new Date(Date.now() + 60_000) });
    expect(report.contentsDeleted).toBeGreaterThanOrEqual(1);
    await expect(store.readContent!(key)).resolves.toBeUndefined();
  });

  it('refuses a bad claim with what was wrong', async () => {
    await expect(
      store.claim({ key: '', taskId: 't', tool: 'x', callId: 'c', argsDigest: 'd', effect: 'irreversible_write', leaseMs: 1 }),
    ).rejects.toThrow('claim: key must be a non-empty string');
    await expect(claimOf(unique(), 'c', 'read' as never)).rejects.toThrow(
      'claim: effect must be one of the effects recorded as intents (reversible_write, irreversible_write), got "read"',
    );
  });

  it('runs the handler of one intent once when two workers claim it at the same moment', async () => {
    for (const effect of ['irreversible_write', 'reversible_write'] as const) {
      let executions = 0;
      // The handler holds its claim until the other call has returned (or 3 s pass), so the two
      // claims overlap however the machine schedules them; a second claim would run it twice.
      let oneReturned!: () => void;
      const returned = new Promise<void>((resolve) => (oneReturned = resolve));
      const tool = defineTool({
        name: 'pay',
        description: 'pays',
        input: z.strictObject({ amount: z.number().describe('amount') }),
        effect,
        status: () => 'not_applied',
        handler: async () => {
          executions++;
          await Promise.race([returned, new Promise((resolve) => setTimeout(resolve, 3_000))]);
          return 'paid';
        },
      });
      const registry = createToolRegistry({ tools: [tool] });
      const workers = [createRunTool({ registry, store }), createRunTool({ registry, store })];
      const taskId = unique();
      const results = await Promise.all(
        workers.map(async (runTool, index) => {
          const result = await runToolOnce(runTool, { taskId, callId: `call-${index}-0`, tool: 'pay', args: { amount: 1 } });
          oneReturned();
          return result;
        }),
      );
      expect(executions).toBe(1);
      expect(results.map((result) => (result as FlatBoundaryResult).code ?? (result as FlatBoundaryResult).status).sort()).toEqual([
        'outcome_unknown',
        'success',
      ]);
    }
  });

  it('keeps the boundary from writing one intent twice, and from sending a started, unconfirmed one again', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-store-workspace-'));
    const drafts = saveDraftTool({ workspace: root });
    let writes = 0;
    const counted = {
      ...drafts,
      handler: (args: unknown, context: Parameters<typeof drafts.handler>[1]) => (writes++, drafts.handler(args, context)),
    };
    const send = sendMessageTool({ workspace: root });
    const registry = createToolRegistry({ tools: [counted, send] });
    const runTool = createRunTool({ registry, store });
    const lookupStatus = createLookupStatus({ registry, store });
    const taskId = unique();
    const call = (tool: string, args: unknown, callId: string): Promise<FlatBoundaryResult> =>
      runToolOnce(runTool, { taskId, callId, tool, args });
    const draft = { path: 'a.md', content: 'A\n' };
    await expect(call('save_draft', draft, 'call-0-0')).resolves.toMatchObject({ status: 'success', executions: 1 });
    await expect(call('save_draft', draft, 'call-1-0')).resolves.toMatchObject({ status: 'success', executions: 0 });
    await expect(
      new MockActivityEnvironment().run(lookupStatus, { taskId, callId: 'c', tool: 'save_draft', args: draft }),
    ).resolves.toMatchObject({ state: 'applied', source: 'store' });
    expect(writes).toBe(1);
    const message = { to: 'ops', subject: 'Hi', body: 'Body' };
    await store.claim({
      key: intentKey(send, message, taskId),
      taskId,
      tool: 'send_message',
      callId: 'call-2-0',
      argsDigest: 'digest',
      effect: 'irreversible_write',
      leaseMs: 0,
    });
    await expect(call('send_message', message, 'call-3-0')).resolves.toMatchObject({
      status: 'error',
      code: 'outcome_unknown',
      executions: 0,
    });
    expect(existsSync(path.join(root, 'outbox')) ? readdirSync(path.join(root, 'outbox'), { recursive: true }) : []).toEqual([]);
  });
});

describe('openConfiguredStore', () => {
  it('chooses PostgreSQL from config and names a missing URL variable', async () => {
    const config = testConfig({ store: { backend: 'postgres', postgresUrlEnv: 'TOLLGATE_TEST_NO_SUCH_URL' } });
    expect(() => openConfiguredStore(config, {})).toThrow(
      'store.postgresUrlEnv: the environment variable TOLLGATE_TEST_NO_SUCH_URL is not set',
    );
    const store = openConfiguredStore(config, { TOLLGATE_TEST_NO_SUCH_URL: postgresUrl() });
    opened.push(store);
    await expect(store.get('nothing-here')).resolves.toBeUndefined();
  });
});
