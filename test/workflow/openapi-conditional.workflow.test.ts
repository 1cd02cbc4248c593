// A reversible PATCH paired with its GET, through whole turns: the answer lost after the server
// applied it (and stored the e-mail lower-cased), the connection cut before it applied, another
// client's change in between, a header no request can carry; and an API that dedupes by
// Idempotency-Key. Every case counts what the server applied.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../tools/define-tool';
import { openapiSchema, type OpenapiConfigInput } from '../../tools/openapi/openapi-config';
import { startOpenapiTools } from '../../tools/openapi/openapi-tool-source';
import { approvalSignal } from '../../workflows/messages';
import { startShopFixture, type ShopFixture } from '../fixtures/openapi-shop-server';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

let shop: ShopFixture;
let documentFile: string;

beforeAll(async () => {
  shop = await startShopFixture();
  documentFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-openapi-conditional-')), 'shop.json');
  writeFileSync(documentFile, JSON.stringify(shop.document));
});
afterEach(() => shop.reset());
afterAll(async () => {
  await shop?.close();
});

type SourceInput = NonNullable<OpenapiConfigInput['sources']>[string];
type Operations = NonNullable<SourceInput['operations']>;

/** The customer API's tools: the PATCH declared reversible behind its GET (with these operation settings), or as the config says. */
async function customerTools({ update = {}, source = {} }: { update?: Operations[string]; source?: Partial<SourceInput> } = {}): Promise<
  ToolDefinition[]
> {
  const openapi = openapiSchema.parse({
    sources: {
      shop: {
        document: documentFile,
        include: ['getCustomer', 'updateCustomer'],
        operations: { updateCustomer: { effect: 'reversible_write', status: 'getCustomer', ...update } },
        ...source,
      },
    },
  });
  return (await startOpenapiTools({ openapi, log: () => undefined })).tools;
}

/** Reports an unknown outcome at once (nobody resolves it in these tests). */
const reporting = () => testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' }, outcomes: { onUnknown: 'report' } });
const update = (args: Record<string, unknown>) => ({ toolCalls: [{ tool: 'shop__updateCustomer', args: { id: 'C1', ...args } }] });
const done = { text: 'done' };

/** What the server applied for the caller (not for someone else). */
const applied = () => shop.customerUpdates.filter((change) => change.by === 'caller');
const patches = () => shop.requests.filter((request) => request.method === 'PATCH');

/** What the model was given back for each tool call of the turn, in order. */
function toolResults(modelInputs: Array<{ messages: Array<{ role: string }> }>): unknown[] {
  return modelInputs
    .at(-1)!
    .messages.filter((message) => message.role === 'tool')
    .map((message) => (message as { result?: unknown }).result);
}

/** What each status lookup of a turn answered, in order, as its history recorded it (the local activities' markers). */
function lookupStates(history: { events?: unknown[] | null }): string[] {
  type Payloads = { payloads?: Array<{ data?: Uint8Array | null }> | null };
  const events = (history.events ?? []) as Array<{
    markerRecordedEventAttributes?: { markerName?: string | null; details?: Record<string, Payloads> | null };
  }>;
  const text = (payloads?: Payloads | null) => {
    const data = payloads?.payloads?.[0]?.data;
    return data ? Buffer.from(data).toString('utf8') : '';
  };
  return events.flatMap((event) => {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity' || !text(marker.details?.data).includes('"activity_type":"lookupStatus"')) return [];
    return [(JSON.parse(text(marker.details?.result)) as { state: string }).state];
  });
}

async function approveFirst(handle: WorkflowHandle): Promise<void> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
  const [pending] = state.pendingApprovals;
  await handle.signal(approvalSignal, { callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest });
}

describe('a reversible PATCH checked by its GET', () => {
  it('the answer lost after the server applied it lower-cased: with no normalisation declared the outcome is unknown, applied once, never sent again', async () => {
    shop.plan('updateCustomer', 'apply_then_cut');
    const { result, history } = await runTurn({
      tools: await customerTools(),
      config: reporting(),
      input: { prompt: 'x', model: scripted([update({ body: { email: 'Bob@Example.COM' } }), done]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'shop__updateCustomer', code: 'outcome_unknown', executions: 1 })]);
    // The history holds each lookup's word: not applied before the first attempt (none existed), unknown after the cut.
    expect(lookupStates(history)).toEqual(['not_applied', 'unknown']);
    expect(applied()).toHaveLength(1);
    expect(patches()).toHaveLength(1);
    expect(shop.customers.get('C1')?.email).toBe('bob@example.com');
  });

  it('the same with the normalisation declared: the GET finds it applied, success from what it holds, applied once', async () => {
    shop.plan('updateCustomer', 'apply_then_cut');
    const { result, modelInputs, history } = await runTurn({
      tools: await customerTools({ update: { compare: { email: ['trim', 'lowercase'] } } }),
      config: reporting(),
      input: { prompt: 'x', model: scripted([update({ body: { email: ' Bob@Example.COM' } }), done]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(toolResults(modelInputs)).toEqual([{ status: 'success', data: { id: 'C1', email: 'bob@example.com', name: 'Ann' } }]);
    expect(lookupStates(history)).toEqual(['not_applied', 'applied']);
    expect(applied()).toHaveLength(1);
    expect(patches()).toHaveLength(1);
  });

  it('the connection cut before it applied: the ETag it was conditioned on is still there, which proves it not applied; sent again with the same If-Match and key, applied once', async () => {
    shop.plan('updateCustomer', 'cut_before_apply');
    const { result, history } = await runTurn({
      tools: await customerTools(),
      config: reporting(),
      input: { prompt: 'x', model: scripted([update({ body: { email: 'Bob@Example.COM' } }), done]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 2 })]);
    // The second not_applied is the ETag's proof: the resource was still at the version the PATCH was conditioned on.
    expect(lookupStates(history)).toEqual(['not_applied', 'not_applied']);
    expect(applied()).toHaveLength(1);
    const sent = patches();
    expect(sent.map((request) => request.headers['if-match'])).toEqual(['"c1"', '"c1"']);
    expect(sent[0].headers['idempotency-key']).toMatch(/^task-1\.shop__updateCustomer\./);
    expect(sent[1].headers['idempotency-key']).toBe(sent[0].headers['idempotency-key']);
  });

  it('without ETags the cut before it applied cannot be proven: unknown, never sent a second time', async () => {
    shop.customerEtags = false;
    shop.plan('updateCustomer', 'cut_before_apply');
    const { result, history } = await runTurn({
      tools: await customerTools(),
      config: reporting(),
      input: { prompt: 'x', model: scripted([update({ body: { email: 'Bob@Example.COM' } }), done]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ code: 'outcome_unknown', executions: 1 })]);
    expect(lookupStates(history)).toEqual(['not_applied', 'unknown']);
    expect(patches()).toHaveLength(1);
    expect(patches()[0].headers['if-match']).toBeUndefined();
    expect(applied()).toHaveLength(0);
  });

  it('another client changed the customer in between: 412, not applied, a final tool_failure saying so, never sent again; the turn goes on', async () => {
    shop.plan('updateCustomer', 'changed_meanwhile');
    const { result, modelInputs, history } = await runTurn({
      tools: await customerTools(),
      config: reporting(),
      input: { prompt: 'x', model: scripted([update({ body: { email: 'Bob@Example.COM' } }), done]) },
    });
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'tool_failure', executions: 1 })]);
    expect((toolResults(modelInputs)[0] as { message: string }).message).toMatch(
      /^shop updateCustomer answered 412: the resource changed since it was read, so this write was not applied; read it again before deciding to write/,
    );
    expect(lookupStates(history)).toEqual(['not_applied']);
    expect(patches()).toHaveLength(1);
    expect(applied()).toHaveLength(0);
    expect(shop.customers.get('C1')).toMatchObject({ email: 'ann@example.com', name: 'Ann (changed)' });
  });

  it('a header value no request can carry (U+0001, U+0100): invalid_arguments, nothing sent, never outcome_unknown', async () => {
    const { result } = await runTurn({
      tools: await customerTools(),
      config: reporting(),
      input: {
        prompt: 'x',
        model: scripted([
          update({ 'X-Change-Reason': 'asked\u0001', body: { name: 'Bea' } }),
          update({ 'X-Change-Reason': 'caf\u0100', body: { name: 'Bea' } }),
          done,
        ]),
        limits: { errorBudget: 5 },
      },
    });
    expect(result.toolCalls.map((event) => event.code)).toEqual(['invalid_arguments', 'invalid_arguments']);
    // Only the status lookups a reversible write makes before it runs went out: no PATCH, and not the handler's GET either.
    expect(shop.requests.map((request) => request.method)).toEqual(['GET', 'GET']);
    expect(shop.count('updateCustomer')).toBe(0);
  });
});

describe('an API that honours Idempotency-Key', () => {
  it('an approved PATCH whose answer was lost is sent again with the same key, which the server answers from its first answer: applied once', async () => {
    shop.plan('updateCustomer', 'apply_then_cut');
    const tools = await customerTools({
      update: { effect: 'irreversible_write', status: undefined },
      source: { honoursIdempotencyKey: true, include: ['updateCustomer'] },
    });
    expect(tools.map((tool) => [tool.name, tool.effect])).toEqual([['shop__updateCustomer', 'irreversible_write']]);
    const { result, modelInputs } = await runTurn({
      tools,
      config: reporting(),
      input: { prompt: 'x', model: scripted([update({ body: { email: 'Bob@Example.COM' } }), done]) },
      interact: approveFirst,
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(toolResults(modelInputs)).toEqual([{ status: 'success', data: { id: 'C1', email: 'bob@example.com', name: 'Ann' } }]);
    const keys = patches().map((request) => request.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(applied()).toEqual([expect.objectContaining({ key: keys[0] })]);
  });
});
