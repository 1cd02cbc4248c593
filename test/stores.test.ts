import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { openConfiguredStore } from '../activities/intents/open-store';
import { intentKey } from '../tools/intent-key';
import { openSqliteStore } from '../activities/intents/sqlite-store';
import type { IdempotencyStore } from '../activities/intents/intent-store';
import { createLookupStatus } from '../activities/boundary/lookup-status';
import { openPostgresStore } from '../activities/intents/postgres-store';
import { createRunTool } from '../activities/boundary/run-tool';
import { createToolRegistry } from '../tools/tool-registry';
import { saveDraftTool } from '../tools/built-in/save-draft';
import { sendMessageTool } from '../tools/built-in/send-message';
import type { RunToolResult, ToolResult } from '../common/types';
import { PROJECT_ROOT } from '../config/load-config';
import { testConfig } from './helpers/test-config';

/** The test database `node scripts/setup.mjs --system` prepares, or the one TOLLGATE_TEST_POSTGRES_URL names. */
function postgresUrl(): string {
  if (process.env.TOLLGATE_TEST_POSTGRES_URL) return process.env.TOLLGATE_TEST_POSTGRES_URL;
  const file = path.join(PROJECT_ROOT, '.tollgate', 'state', 'postgres-test-url');
  if (!existsSync(file)) throw new Error('no PostgreSQL for the tests: run `node scripts/setup.mjs --system` as root, or set TOLLGATE_TEST_POSTGRES_URL');
  return readFileSync(file, 'utf8').trim();
}

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

  it('records started, then committed with the receipt, and never lets a start overwrite a commit', async () => {
    const key = unique();
    await expect(store.get(key)).resolves.toBeUndefined();
    await store.markStarted({ key, taskId: 't', tool: 'save_draft', callId: 'call-0-0' });
    await expect(store.get(key)).resolves.toMatchObject({ key, state: 'started', taskId: 't', callId: 'call-0-0' });
    await store.markStarted({ key, taskId: 't', tool: 'save_draft', callId: 'call-1-0' });
    await expect(store.get(key)).resolves.toMatchObject({ state: 'started', callId: 'call-1-0' });
    await store.markCommitted(key, receipt);
    await store.markStarted({ key, taskId: 't', tool: 'save_draft', callId: 'call-2-0' });
    await expect(store.get(key)).resolves.toMatchObject({ state: 'committed', callId: 'call-1-0', receipt });
  });

  it('forgets only a started intent, and commits one it never saw start', async () => {
    const started = unique();
    await store.markStarted({ key: started, taskId: 't', tool: 'x', callId: 'c' });
    await store.forget(started);
    await expect(store.get(started)).resolves.toBeUndefined();
    const committed = unique();
    await store.markCommitted(committed, receipt);
    await store.forget(committed);
    await expect(store.get(committed)).resolves.toMatchObject({ state: 'committed', receipt });
  });

  it('keeps the boundary from writing one intent twice, and from sending a started, unconfirmed one again', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-store-workspace-'));
    const drafts = saveDraftTool({ workspace: root });
    let writes = 0;
    const counted = { ...drafts, handler: (args: unknown, context: Parameters<typeof drafts.handler>[1]) => (writes++, drafts.handler(args, context)) };
    const send = sendMessageTool({ workspace: root });
    const registry = createToolRegistry({ tools: [counted, send] });
    const runTool = createRunTool({ registry, store });
    const lookupStatus = createLookupStatus({ registry, store });
    const taskId = unique();
    const call = (tool: string, args: unknown, callId: string): Promise<RunToolResult> => new MockActivityEnvironment().run(runTool, { taskId, callId, tool, args });
    const draft = { path: 'a.md', content: 'A\n' };
    await expect(call('save_draft', draft, 'call-0-0')).resolves.toMatchObject({ status: 'success', attempt: 1 });
    await expect(call('save_draft', draft, 'call-1-0')).resolves.toMatchObject({ status: 'success', attempt: 0 });
    await expect(new MockActivityEnvironment().run(lookupStatus, { taskId, callId: 'c', tool: 'save_draft', args: draft })).resolves.toMatchObject({ state: 'applied', source: 'store' });
    expect(writes).toBe(1);
    const message = { to: 'ops', subject: 'Hi', body: 'Body' };
    await store.markStarted({ key: intentKey(send, message, taskId), taskId, tool: 'send_message', callId: 'call-2-0' });
    await expect(call('send_message', message, 'call-3-0')).resolves.toMatchObject({ status: 'error', code: 'outcome_unknown', attempt: 0 });
    expect(existsSync(path.join(root, 'outbox')) ? readdirSync(path.join(root, 'outbox'), { recursive: true }) : []).toEqual([]);
  });
});

describe('openConfiguredStore', () => {
  it('chooses PostgreSQL from config and names a missing URL variable', async () => {
    const config = testConfig({ store: { backend: 'postgres', postgresUrlEnv: 'TOLLGATE_TEST_NO_SUCH_URL' } });
    expect(() => openConfiguredStore(config, {})).toThrow('store.postgresUrlEnv: the environment variable TOLLGATE_TEST_NO_SUCH_URL is not set');
    const store = openConfiguredStore(config, { TOLLGATE_TEST_NO_SUCH_URL: postgresUrl() });
    opened.push(store);
    await expect(store.get('nothing-here')).resolves.toBeUndefined();
  });
});
