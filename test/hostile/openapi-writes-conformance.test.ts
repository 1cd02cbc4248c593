// The OpenAPI conformance classes of HTTP writes, each through the real boundary (registry, SQLite
// intent store, runTool, lookupStatus) against a loopback API that counts what it applies: values
// no request can carry, a request Node refuses to build, the lost-answer race (applied, then the
// connection dropped) against an API that normalises what it stores, a cut before it applied, and
// another client's change between the GET and the write.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLookupStatus } from '../../activities/boundary/lookup-status';
import { createRunTool } from '../../activities/boundary/run-tool';
import { WRITE_INTERRUPTED, type StatusLookup } from '../../common/activity-types';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { IdempotencyStore } from '../../intents/intent-store';
import { AnswerLostError, NotSentError } from '../../tools/call-errors';
import type { ToolDefinition } from '../../tools/define-tool';
import type { OpenapiConfigInput } from '../../tools/openapi/openapi-config';
import { sendHttpRequest, UnbuiltRequestError } from '../../tools/openapi/openapi-http';
import { openapiToolSource } from '../../tools/openapi/openapi-tool-source';
import { createToolRegistry } from '../../tools/tool-registry';
import { openToolSources } from '../../tools/tool-source';
import { startShopFixture, type ShopFixture } from '../fixtures/openapi-shop-server';
import { runToolOnce } from '../helpers/run-tool-once';
import { testConfig } from '../helpers/test-config';

let shop: ShopFixture;
let document: string;
beforeAll(async () => {
  shop = await startShopFixture();
  document = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-openapi-writes-')), 'shop.json');
  writeFileSync(document, JSON.stringify(shop.document));
});
afterEach(() => shop.reset());
afterAll(async () => {
  await shop?.close();
});

type Operations = NonNullable<NonNullable<OpenapiConfigInput['sources']>[string]['operations']>;

/** The customer API's tools, opened as a worker opens them; the PATCH reversible behind its GET unless `update` says otherwise. */
async function customerTools(update: Operations[string] = {}): Promise<ToolDefinition[]> {
  const operations = { updateCustomer: { effect: 'reversible_write' as const, status: 'getCustomer', ...update } };
  const opened = await openToolSources(
    [openapiToolSource({ sources: { shop: { document, include: ['getCustomer', 'updateCustomer'], operations } } })],
    {
      config: testConfig(),
      log: () => undefined,
      env: {},
    },
  );
  return opened.tools;
}

/** One worker's boundary over these tools and a store (its own unless given): runTool and lookupStatus, as the workflow calls them. */
function worker(tools: ToolDefinition[], store: IdempotencyStore = openSqliteStore(':memory:')) {
  const registry = createToolRegistry({ tools });
  const runTool = createRunTool({ registry, store });
  const lookupStatus = createLookupStatus({ registry, store });
  const definitionDigest = registry.get('shop__updateCustomer')?.source?.definitionDigest;
  return {
    store,
    run: (args: unknown, taskId: string) =>
      runToolOnce(runTool, { taskId, callId: `call-${randomUUID()}`, tool: 'shop__updateCustomer', args, definitionDigest }),
    lookup: (args: unknown, taskId: string, beforeFirstRun = false): Promise<StatusLookup> =>
      new MockActivityEnvironment().run(lookupStatus, { taskId, callId: 'lookup', tool: 'shop__updateCustomer', args, beforeFirstRun }),
  };
}

const applied = () => shop.customerUpdates.filter((change) => change.by === 'caller');
const patches = () => shop.requests.filter((request) => request.method === 'PATCH');

describe('values no HTTP request can carry', () => {
  const hostile: Array<[string, Record<string, unknown>]> = [
    ['U+0001 in a header', { 'X-Change-Reason': 'a\u0001b' }],
    ['DEL in a header', { 'X-Change-Reason': 'a\u007f' }],
    ['a C1 control in a header', { 'X-Change-Reason': '\u0085' }],
    ['a character above U+00FF in a header', { 'X-Change-Reason': 'caf\u0100' }],
    ['a bidi override in a header', { 'X-Change-Reason': '\u202emoc.elpmaxe' }],
    ['an emoji in a header', { 'X-Change-Reason': 'ok \u{1F600}' }],
    ['a trailing space in a header', { 'X-Change-Reason': 'late ' }],
    ['U+0001 in a path', { id: 'C\u0001' }],
    ['a lone surrogate in a path', { id: 'C\ud800' }],
  ];

  it.each(hostile)(
    '%s: invalid_arguments before anything is sent (0 requests), the intent released, never write_interrupted',
    async (_name, args) => {
      for (const update of [{}, { effect: 'irreversible_write' as const, status: undefined }]) {
        const { run, store } = worker(await customerTools(update));
        const taskId = `hostile-${randomUUID()}`;
        const result = await run({ id: 'C1', body: { name: 'Bea' }, ...args }, taskId);
        expect(result).toMatchObject({ status: 'error', code: 'invalid_arguments' });
        expect(result.message).toMatch(/(header|path) parameter (X-Change-Reason|id) (holds|begins or ends)/);
        expect(await store.listTask(taskId)).toEqual([]);
      }
      expect(shop.requests).toHaveLength(0);
      expect(applied()).toHaveLength(0);
    },
  );

  it('a request Node refuses to build is never sent: UnbuiltRequestError, not a lost answer, 0 connections', async () => {
    let connections = 0;
    const server = http.createServer((_request, response) => response.end());
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
      const sent = sendHttpRequest(
        { method: 'PATCH', url, headers: { 'x-bad': 'a\u0001b' }, body: Buffer.from('{}') },
        { signal: new AbortController().signal, maxResponseBytes: 1024 },
      );
      const error = await sent.then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(UnbuiltRequestError.isInstance(error)).toBe(true);
      expect(AnswerLostError.isInstance(error)).toBe(false);
      expect(NotSentError.isInstance(error)).toBe(false);
      expect((error as Error).message).toMatch(/^PATCH http:\/\/127\.0\.0\.1:\d+\/x could not be built, so it was not sent: /);
      // A good request on the same server afterwards is the first connection it sees.
      await sendHttpRequest({ method: 'GET', url, headers: {} }, { signal: new AbortController().signal, maxResponseBytes: 1024 });
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('the lost-answer race: the server applies the PATCH (storing the e-mail lower-cased), then drops the connection', () => {
  const args = { id: 'C1', body: { email: 'Bob@Example.COM' } };

  it.each([
    [
      'with the normalisation declared, the status check says applied',
      { compare: { email: ['trim' as const, 'lowercase' as const] } },
      'applied',
    ],
    ['with none declared, it says unknown', {}, 'unknown'],
  ])('%s, never not_applied; applied once', async (_name, update, verdict) => {
    shop.plan('updateCustomer', 'apply_then_cut');
    const tools = await customerTools(update);
    const { run, lookup } = worker(tools);
    const taskId = `race-${randomUUID()}`;
    // Before the first execution no attempt exists, so the store says not applied whatever the GET shows.
    expect(await lookup(args, taskId, true)).toMatchObject({ state: 'not_applied' });
    await expect(run(args, taskId)).rejects.toMatchObject({ type: WRITE_INTERRUPTED });
    for (let again = 0; again < 3; again++) expect((await lookup(args, taskId)).state).toBe(verdict);
    expect(applied()).toHaveLength(1);
    expect(patches()).toHaveLength(1);
    expect(shop.customers.get('C1')?.email).toBe('bob@example.com');
  });

  it('cut before it applied: the ETag it was sent with is still there, so not applied on this worker; unknown on a worker that did not send it', async () => {
    shop.plan('updateCustomer', 'cut_before_apply');
    const store = openSqliteStore(':memory:');
    const sender = worker(await customerTools(), store);
    const other = worker(await customerTools(), store);
    const taskId = `cut-${randomUUID()}`;
    await expect(sender.run(args, taskId)).rejects.toMatchObject({ type: WRITE_INTERRUPTED });
    expect(patches().map((request) => request.headers['if-match'])).toEqual(['"c1"']);
    expect(await other.lookup(args, taskId)).toMatchObject({ state: 'unknown' });
    expect(await sender.lookup(args, taskId)).toMatchObject({ state: 'not_applied' });
    expect(await sender.run(args, taskId)).toMatchObject({ status: 'success', data: { email: 'bob@example.com' } });
    expect(applied()).toHaveLength(1);
    expect(patches()).toHaveLength(2);
  });

  it('a stale status check is no proof either: once the resource moved on, the sender says unknown too', async () => {
    shop.plan('updateCustomer', 'cut_before_apply');
    const { run, lookup } = worker(await customerTools());
    const taskId = `moved-${randomUUID()}`;
    await expect(run(args, taskId)).rejects.toMatchObject({ type: WRITE_INTERRUPTED });
    // Another client changes the customer: its ETag is no longer the one the write was conditioned on.
    const customer = shop.customers.get('C1')!;
    customer.name = 'Ann B.';
    customer.version++;
    expect(await lookup(args, taskId)).toMatchObject({ state: 'unknown' });
    expect(applied()).toHaveLength(0);
  });
});

describe('another client changes the resource between the GET and the write', () => {
  it('412: tool_failure, final, saying the resource changed and the write was not applied; the intent released; sent once', async () => {
    shop.plan('updateCustomer', 'changed_meanwhile');
    const { run, store } = worker(await customerTools());
    const taskId = `conflict-${randomUUID()}`;
    const result = await run({ id: 'C1', body: { email: 'bob@example.com' } }, taskId);
    expect(result).toMatchObject({ status: 'error', code: 'tool_failure', retryable: false });
    expect(result.message).toMatch(/answered 412: the resource changed since it was read, so this write was not applied/);
    expect(await store.listTask(taskId)).toEqual([]);
    expect(patches()).toHaveLength(1);
    expect(applied()).toHaveLength(0);
  });
});
