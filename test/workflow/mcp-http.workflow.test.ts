import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mcpSchema, type McpServerConfig } from '../../tools/mcp/mcp-config';
import { mcpToolSource, startMcpTools, type McpToolSource } from '../../tools/mcp/mcp-tool-source';
import type { AgentTurnResult } from '../../common/contract/turn';
import { createWorker } from '../../worker/create-worker';
import { approvalSignal } from '../../workflows/messages';
import { startMcpHttpFixture, type McpHttpFixture } from '../fixtures/mcp-http-server';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

let fixture: McpHttpFixture;
const sources: McpToolSource[] = [];

beforeAll(async () => {
  fixture = await startMcpHttpFixture();
});
afterEach(async () => {
  await Promise.all(sources.splice(0).map((source) => source.close()));
  fixture.reset();
});
afterAll(async () => {
  await fixture?.close();
});

/** The fixture's tools, served by a fresh client with this server config. */
async function fixtureTools(server: Partial<McpServerConfig> = {}) {
  const mcp = mcpSchema.parse({ servers: { shop: { url: fixture.url, ...server } } });
  const source = await startMcpTools({ mcp, log: () => undefined });
  sources.push(source);
  return source.tools;
}

const lookup = { toolCalls: [{ tool: 'shop__lookup_order', args: { orderId: '42' } }] };
const done = { text: 'done' };

/** What the model was given back for the turn's first tool call. */
function toolMessage(modelInputs: Array<{ messages: Array<{ role: string }> }>) {
  return modelInputs[1].messages.find((message) => message.role === 'tool');
}
const note = { toolCalls: [{ tool: 'shop__record_note', args: { note: 'called back' } }] };

/** Approves the first call that waits for a person. */
async function approveFirst(handle: WorkflowHandle): Promise<void> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
  await handle.signal(approvalSignal, {
    callId: state.pendingApprovals[0].callId,
    decision: 'approve',
    argsDigest: state.pendingApprovals[0].argsDigest,
  });
}

describe('MCP tools over Streamable HTTP: the failure matrix', () => {
  it('serves the server tools as <server>__<tool> with the server JSON schema as the model sees it', async () => {
    const tools = await fixtureTools({ trustAnnotations: true });
    expect(tools.map((tool) => [tool.name, tool.effect])).toEqual([
      ['shop__lookup_order', 'read'],
      ['shop__record_note', 'irreversible_write'],
    ]);
    expect(tools[0].source?.jsonSchema).toEqual({
      type: 'object',
      properties: { orderId: { type: 'string', pattern: '^[0-9]+$' } },
      required: ['orderId'],
      additionalProperties: false,
    });
    expect(tools[0].source?.definitionDigest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses arguments the server schema rejects: invalid_arguments, 0 executions, nothing scheduled', async () => {
    const badLookup = { toolCalls: [{ tool: 'shop__lookup_order', args: { orderId: 'forty-two', extra: 1 } }] };
    const tools = await fixtureTools({ trustAnnotations: true });
    const { result, runToolScheduled } = await runTurn({
      tools,
      input: { prompt: 'x', model: scripted([badLookup, done]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ code: 'invalid_arguments', executions: 0 })]);
    expect(runToolScheduled).toBe(0);
    expect(fixture.executions.lookup_order).toBe(0);
  });

  it('retries a trusted read whose connection dropped twice, within the bound: success on the third execution', async () => {
    const tools = await fixtureTools({ trustAnnotations: true });
    fixture.plan('lookup_order', 'crash', 'crash');
    const { result, modelInputs } = await runTurn({ tools, input: { prompt: 'x', model: scripted([lookup, { text: 'done' }]) } });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'shop__lookup_order', effect: 'read', status: 'success', executions: 3 }),
    ]);
    expect(fixture.executions.lookup_order).toBe(3);
    expect(toolMessage(modelInputs)).toMatchObject({ result: { status: 'success', data: 'order 42: shipped' } });
  });

  it('stops retrying a read at its bound: transient_failure after exactly maxAttempts executions', async () => {
    const tools = await fixtureTools({ trustAnnotations: true, tools: { lookup_order: { maxAttempts: 2 } } });
    fixture.plan('lookup_order', 'crash', 'crash', 'crash');
    const { result } = await runTurn({ tools, input: { prompt: 'x', model: scripted([lookup, { text: 'done' }]) } });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'transient_failure', executions: 2 })]);
    expect(fixture.executions.lookup_order).toBe(2);
  });

  it('retries a read that hung past its timeout: success on the second execution', async () => {
    const tools = await fixtureTools({ trustAnnotations: true, tools: { lookup_order: { timeout: '500ms' } } });
    fixture.plan('lookup_order', 'hang');
    const { result } = await runTurn({ tools, input: { prompt: 'x', model: scripted([lookup, { text: 'done' }]) } });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 2 })]);
    expect(fixture.executions.lookup_order).toBe(2);
  });

  it('takes isError: true as tool_failure by the flag, and does not retry it: 1 execution', async () => {
    const tools = await fixtureTools({ trustAnnotations: true });
    fixture.plan('lookup_order', 'fail');
    const { result, modelInputs } = await runTurn({ tools, input: { prompt: 'x', model: scripted([lookup, { text: 'done' }]) } });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'tool_failure', executions: 1 })]);
    expect(fixture.executions.lookup_order).toBe(1);
    expect(toolMessage(modelInputs)).toMatchObject({ result: { message: 'lookup_order failed: the backend said no' } });
  });

  it('makes an untrusted server read-only tool wait for approval like any irreversible write', async () => {
    const tools = await fixtureTools();
    let waited = 0;
    const { result } = await runTurn({
      tools,
      input: { prompt: 'x', model: scripted([lookup, { text: 'done' }]) },
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        waited = state.pendingApprovals.length;
        expect(fixture.executions.lookup_order).toBe(0);
        await approveFirst(handle);
      },
    });
    expect(waited).toBe(1);
    expect(result.toolCalls).toEqual([expect.objectContaining({ effect: 'irreversible_write', status: 'success', executions: 1 })]);
    expect(fixture.executions.lookup_order).toBe(1);
  });

  it('reports a write cut off by its timeout as outcome_unknown with exactly 1 execution', async () => {
    const tools = await fixtureTools({ trustAnnotations: true, tools: { record_note: { timeout: '500ms' } } });
    fixture.plan('record_note', 'hang');
    const { result } = await runTurn({ tools, input: { prompt: 'x', model: scripted([note, { text: 'done' }]) }, interact: approveFirst });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'shop__record_note', status: 'error', code: 'outcome_unknown', executions: 1 }),
    ]);
    expect(fixture.executions.record_note).toBe(1);
  });

  it('reports a write whose connection dropped mid-call as outcome_unknown, 1 execution, and serves the next call', async () => {
    const tools = await fixtureTools({ trustAnnotations: true });
    fixture.plan('record_note', 'crash');
    // Nobody is there to say whether the note was recorded: the turn reports it (outcomes.onUnknown: report).
    const config = testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' }, outcomes: { onUnknown: 'report' } });
    const input = { prompt: 'x', model: scripted([note, lookup, done]) };
    const { result } = await runTurn({ tools, config, input, interact: approveFirst });
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.code, event.executions])).toEqual([
      ['shop__record_note', 'error', 'outcome_unknown', 1],
      ['shop__lookup_order', 'success', undefined, 1],
    ]);
    expect(fixture.executions.record_note).toBe(1);
    expect(fixture.notes).toEqual(['called back']);
  });

  it('runs an approved write once and gives the model its structured result', async () => {
    const tools = await fixtureTools({ trustAnnotations: true });
    const { result, modelInputs } = await runTurn({ tools, input: { prompt: 'x', model: scripted([note, done]) }, interact: approveFirst });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(fixture.notes).toEqual(['called back']);
    expect(toolMessage(modelInputs)).toMatchObject({ result: { status: 'success', data: { structuredContent: { recorded: 1 } } } });
  });

  it('refuses a write whose definition changed on the server after the approval: forbidden, 0 executions', async () => {
    const tools = await fixtureTools({ trustAnnotations: true });
    const { result } = await runTurn({
      tools,
      input: { prompt: 'x', model: scripted([note, { text: 'done' }]) },
      interact: async (handle) => {
        await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        fixture.changeDescription('record_note', 'Records a note and emails it to every customer.');
        await approveFirst(handle);
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'forbidden', executions: 1 })]);
    expect(fixture.executions.record_note).toBe(0);
    expect(fixture.notes).toEqual([]);
  });

  it('refuses an approved call on a worker started after the tool changed: forbidden before the handler, 0 executions', async () => {
    const { env, workflowBundle } = environment;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue: `test-${randomUUID()}` } };
    const mcp = mcpToolSource({ servers: { shop: { url: fixture.url, trustAnnotations: true } } });
    // No cached workflows: the turn's next task goes to the task queue, where the second worker polls, not to this worker's own.
    const first = await createWorker({
      config,
      connection: env.nativeConnection,
      workflowBundle,
      toolSources: [mcp],
      workerOptions: { maxCachedWorkflows: 0 },
    });
    const handle = await first.runUntil(async () => {
      const started = await env.client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId: 'task-1', prompt: 'x', model: scripted([note, { text: 'done' }]) }],
      });
      await waitForState(started, (current) => current.pendingApprovals.length > 0);
      return started;
    });
    fixture.changeDescription('record_note', 'Records a note and emails it to every customer.');
    const second = await createWorker({ config, connection: env.nativeConnection, workflowBundle, toolSources: [mcp] });
    const result = await second.runUntil(async () => {
      await approveFirst(handle);
      return (await handle.result()) as AgentTurnResult;
    });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'shop__record_note', status: 'error', code: 'forbidden', executions: 0 }),
    ]);
    expect(fixture.executions.record_note).toBe(0);
  });
});
