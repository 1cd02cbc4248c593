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
const TOKEN = 'shop-token-7f3a9c21e5';

let shop: ShopFixture;
let documentFile: string;

beforeAll(async () => {
  shop = await startShopFixture();
  documentFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-openapi-')), 'shop.json');
  writeFileSync(documentFile, JSON.stringify(shop.document));
});
afterEach(() => shop.reset());
afterAll(async () => {
  await shop?.close();
});

type SourceInput = NonNullable<OpenapiConfigInput['sources']>[string];

/** The shop's tools, read from its document with this source config. */
async function shopTools(source: Partial<SourceInput> = {}): Promise<ToolDefinition[]> {
  const openapi = openapiSchema.parse({
    sources: { shop: { document: documentFile, headersFromEnv: { Authorization: 'SHOP_AUTH' }, ...source } },
  });
  const opened = await startOpenapiTools({ openapi, log: () => undefined, env: { SHOP_AUTH: `Bearer ${TOKEN}` } });
  return opened.tools;
}

/** Approves the first call that waits for a person, for the arguments shown. */
async function approveFirst(handle: WorkflowHandle): Promise<void> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
  const [pending] = state.pendingApprovals;
  await handle.signal(approvalSignal, { callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest });
}

/** What the model was given back for each tool call of the turn, in order. */
function toolResults(modelInputs: Array<{ messages: Array<{ role: string }> }>): unknown[] {
  return modelInputs
    .at(-1)!
    .messages.filter((message) => message.role === 'tool')
    .map((message) => (message as { result?: unknown }).result);
}

const call = (tool: string, args: Record<string, unknown>) => ({ toolCalls: [{ tool: `shop__${tool}`, args }] });
const done = { text: 'done' };
/** Reports an unknown outcome at once (nobody resolves it in these tests). */
const reporting = () => testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' }, outcomes: { onUnknown: 'report' } });

describe('an OpenAPI document as tools', () => {
  it('serves each operation as <source>__<operationId>, its effect from the method, parameters by name and the body under body', async () => {
    const tools = await shopTools({
      include: ['getOrder', 'setNote', 'createCharge', 'tag:payments', 'searchOrders'],
      operations: { setNote: { effect: 'reversible_write', status: 'getOrder' } },
    });
    expect(tools.map((tool) => [tool.name, tool.effect, typeof (tool as { status?: unknown }).status])).toEqual([
      ['shop__getOrder', 'read', 'undefined'],
      ['shop__setNote', 'reversible_write', 'function'],
      ['shop__createCharge', 'irreversible_write', 'undefined'],
      ['shop__createPayment', 'irreversible_write', 'undefined'],
      ['shop__searchOrders', 'read', 'undefined'],
    ]);
    const setNote = tools.find((tool) => tool.name === 'shop__setNote')!;
    expect(setNote.source?.jsonSchema).toMatchObject({
      type: 'object',
      properties: { id: { type: 'string', pattern: '^[A-Z][0-9]+$' }, body: { properties: { note: { type: 'string', minLength: 1 } } } },
      required: ['id', 'body'],
      additionalProperties: false,
    });
    // The Idempotency-Key header is the intent's, never the model's to choose.
    const payment = tools.find((tool) => tool.name === 'shop__createPayment')!;
    expect(Object.keys((payment.source?.jsonSchema as { properties: object }).properties)).toEqual(['body']);
    expect(payment.source?.jsonSchema).toMatchObject({ $defs: { Amount: { required: ['cents'] } } });
    expect(payment.description).toBe('Makes a payment, once per Idempotency-Key (POST /payments)');
  });

  it('refuses arguments the document rejects before any request: invalid_arguments, 0 executions', async () => {
    const tools = await shopTools({ include: ['getOrder'] });
    const { result } = await runTurn({ tools, input: { prompt: 'x', model: scripted([call('getOrder', { id: '../admin' }), done]) } });
    expect(result.toolCalls).toEqual([expect.objectContaining({ code: 'invalid_arguments', executions: 0 })]);
    expect(shop.requests).toHaveLength(0);
  });

  it('retries a read the server answered 503 with Retry-After, and sends the token, which no history holds', async () => {
    shop.plan('getStock', 'unavailable');
    const tools = await shopTools({ include: ['getStock'] });
    const { result, history, modelInputs } = await runTurn({
      tools,
      input: { prompt: 'x', model: scripted([call('getStock', { sku: 'chair' }), done]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 2 })]);
    expect(toolResults(modelInputs)).toEqual([{ status: 'success', data: { sku: 'chair', inStock: 7 } }]);
    expect(shop.count('getStock')).toBe(2);
    expect(shop.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]);
    expect(JSON.stringify(history)).not.toContain(TOKEN);
  });

  it('sends a POST without Idempotency-Key support only once a person approved it, once', async () => {
    const tools = await shopTools({ include: ['createCharge'] });
    const { result, modelInputs } = await runTurn({
      tools,
      input: { prompt: 'x', model: scripted([call('createCharge', { body: { cents: 500, currency: 'EUR' } }), done]) },
      interact: async (handle) => {
        expect(shop.count('createCharge')).toBe(0);
        await approveFirst(handle);
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(toolResults(modelInputs)).toEqual([{ status: 'success', data: { charged: 500, charge: 1 } }]);
    expect(shop.count('createCharge')).toBe(1);
    expect(shop.charges).toEqual([{ cents: 500 }]);
  });

  it('reports a POST cut off after the server applied it as outcome_unknown, sent once, when the API does not honour Idempotency-Key', async () => {
    shop.plan('createPayment', 'apply_then_cut');
    const tools = await shopTools({ include: ['createPayment'] });
    const { result } = await runTurn({
      tools,
      config: reporting(),
      input: { prompt: 'x', model: scripted([call('createPayment', { body: { cents: 900 } }), done]) },
      interact: approveFirst,
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ code: 'outcome_unknown', executions: 1 })]);
    expect(shop.count('createPayment')).toBe(1);
    expect(shop.payments).toHaveLength(1);
  });

  it('sends a POST cut off after the server applied it again with the same Idempotency-Key when the API honours it: applied once, no person asked again', async () => {
    shop.plan('createPayment', 'apply_then_cut');
    const tools = await shopTools({ include: ['createPayment'], honoursIdempotencyKey: true });
    let approvals = 0;
    const { result, modelInputs } = await runTurn({
      tools,
      config: reporting(),
      input: { prompt: 'x', model: scripted([call('createPayment', { body: { cents: 900 } }), done]) },
      interact: async (handle) => {
        approvals++;
        await approveFirst(handle);
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(toolResults(modelInputs)).toEqual([{ status: 'success', data: { paid: 900, payment: 1 } }]);
    expect(approvals).toBe(1);
    expect(shop.count('createPayment')).toBe(2);
    const keys = shop.requests.map((request) => request.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^task-1\.shop__createPayment\./);
    expect(keys).toEqual([keys[0], keys[0]]);
    expect(shop.payments).toEqual([{ key: keys[0], cents: 900 }]);
  });

  it('runs a PUT declared reversible behind its GET status check: cut off after applying, the GET finds it applied, never sent twice', async () => {
    shop.plan('setNote', 'apply_then_cut');
    const tools = await shopTools({
      include: ['getOrder', 'setNote'],
      operations: { setNote: { effect: 'reversible_write', status: 'getOrder' } },
    });
    const { result, modelInputs } = await runTurn({
      tools,
      input: { prompt: 'x', model: scripted([call('setNote', { id: 'A1', body: { note: 'call back' } }), done]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success' })]);
    expect(toolResults(modelInputs)).toEqual([{ status: 'success', data: { id: 'A1', status: 'shipped', note: 'call back' } }]);
    expect(shop.count('setNote')).toBe(1);
    expect(shop.notes.get('A1')).toBe('call back');
    // The status GET: before the write ran (not applied yet) and after it was cut off (applied).
    expect(shop.count('getOrder')).toBe(2);
  });

  it("gives the server's refusals their codes with its message: 403 forbidden, 404 tool_failure, a redirect never followed", async () => {
    const tools = await shopTools({ include: ['getAdmin', 'getOrder', 'getMoved'] });
    const { result, modelInputs } = await runTurn({
      tools,
      input: {
        prompt: 'x',
        model: scripted([call('getAdmin', {}), call('getOrder', { id: 'Z9' }), call('getMoved', {}), done]),
        limits: { errorBudget: 5 },
      },
    });
    expect(result.toolCalls.map((event) => [event.tool, event.code, event.executions])).toEqual([
      ['shop__getAdmin', 'forbidden', 1],
      ['shop__getOrder', 'tool_failure', 1],
      ['shop__getMoved', 'tool_failure', 1],
    ]);
    expect(toolResults(modelInputs).map((given) => (given as { message: string }).message)).toEqual([
      'shop getAdmin answered 403: not for you',
      'shop getOrder answered 404: no order Z9',
      `shop getMoved answered 302, a redirect to ${shop.elsewhere.url}, which is not followed`,
    ]);
    expect(shop.elsewhere.requests).toHaveLength(0);
  });

  it('sends query arrays as repeated parameters', async () => {
    const tools = await shopTools({ include: ['searchOrders'] });
    const { modelInputs } = await runTurn({
      tools,
      input: { prompt: 'x', model: scripted([call('searchOrders', { q: 'a&b', status: ['open', 'late'] }), done]) },
    });
    expect(toolResults(modelInputs)).toEqual([{ status: 'success', data: { q: 'a&b', status: ['open', 'late'], found: ['A1'] } }]);
    expect(shop.requests[0].path).toBe('/search?q=a%26b&status=open&status=late');
  });
});
