// Handoffs (defineAgent({ handoffs })) on the time-skipping server, against the fake OpenAI-compatible
// provider, which records every request the model server got: after `transfer_to_<agent>` the next
// steps are sent the other agent's instructions, tools and settings; a tool only the first agent had
// is refused; the other agent's approval rules decide; the result names the agent that answered and
// lists the handoff; the bound, a target not listed, a changed definition; the history replays.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { createActivities } from '../../activities';
import { defineAgent, type AgentDefinition } from '../../agents/define-agent';
import type { AgentTurnInput, AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { ToolDefinition } from '../../tools/define-tool';
import { createWorker } from '../../worker/create-worker';
import { decideUpdate, stateQuery } from '../../workflows/messages';
import { openaiStream, startFakeProvider, type FakeProvider, type FakeReply } from '../helpers/fake-provider';
import { HISTORY_FOLDER, keepHistory } from '../helpers/histories';
import { testConfig } from '../helpers/test-config';
import { useTimeSkippingEnvironment, waitForState } from '../helpers/turn-runner';
import { lookupOrder, refundOrder } from '../fixtures/order-tools';

/** A turn with a handoff and one refused past the bound, replayed by test/workflow/replay.test.ts with the others (TOLLGATE_RECORD_HISTORIES=1 writes it). */
const HANDOFF_HISTORY = path.join(HISTORY_FOLDER, 'agent-handoff.json');

const environment = useTimeSkippingEnvironment();
let provider: FakeProvider;
beforeAll(async () => {
  provider = await startFakeProvider();
});
afterAll(() => provider?.close());

/** Handler executions by tool, counted where they happen. */
const executions = new Map<string, number>();
function counted(tool: ToolDefinition): ToolDefinition {
  return {
    ...tool,
    handler: (args, context) => {
      executions.set(tool.name, (executions.get(tool.name) ?? 0) + 1);
      return tool.handler(args, context);
    },
  } as ToolDefinition;
}
const ran = (tool: string) => executions.get(tool) ?? 0;

const tools = [counted(lookupOrder), counted(refundOrder)];

/** Billing: its instructions a function of the turn's input (run once, recorded), refunds decided by its own rule up to 5 EUR. */
function billingAgent(extra: { handoffs?: string[]; description?: string } = {}) {
  return defineAgent({
    name: 'billing',
    description: extra.description ?? 'Refunds orders.',
    instructions: (input) => `You are billing. You refund orders of task ${input.taskId.slice(0, 5)}.`,
    modelSettings: { temperature: 0 },
    tools: [refundOrder],
    ...(extra.handoffs ? { handoffs: extra.handoffs } : {}),
    approvals: {
      rules: [
        {
          name: 'small',
          tool: 'refund_order',
          when: { properties: { orderId: { type: 'string' }, cents: { maximum: 500 } }, required: ['cents'] },
          decision: 'approve',
        },
      ],
    },
  });
}
const billing = billingAgent();
const triage = defineAgent({
  name: 'triage',
  instructions: 'You sort tickets and hand refunds to billing.',
  modelSettings: { temperature: 0.7 },
  tools: [lookupOrder],
  handoffs: [billing],
});
const support = defineAgent({ name: 'support', instructions: 'You answer questions.', tools: ['lookup_order'] });

function configFor(extra: Record<string, unknown> = {}): TollgateConfig {
  const base = testConfig({
    ...extra,
    retry: { initialInterval: '100ms', maximumInterval: '1s' },
    model: { default: 'fake', models: { fake: { provider: 'openai-compatible', model: 'gpt-test', baseURL: provider.baseURL } } },
  });
  return { ...base, temporal: { ...base.temporal, taskQueue: `handoffs-${randomUUID()}` } };
}

/** A fetch that names the turn asking, so that each turn is answered from its own queue. */
async function routedFetch(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) {
  const { Context } = await import('@temporalio/activity');
  const headers = new Headers(init?.headers);
  headers.set('x-tollgate-fake-queue', Context.current().info.workflowExecution?.workflowId ?? '');
  return fetch(input, { ...init, headers });
}

/**
 * Runs one turn on a fresh worker declaring `agents`; `laterAgents`, when given, is what the worker
 * declares from the turn's second settings look on (a registry changed between the start and the handoff).
 */
async function runTurn({
  input,
  replies,
  agents,
  laterAgents,
  config = configFor(),
  interact,
}: {
  input: Omit<AgentTurnInput, 'taskId'>;
  replies: FakeReply[];
  agents: AgentDefinition<unknown>[];
  laterAgents?: AgentDefinition<unknown>[];
  config?: TollgateConfig;
  /** Runs after the start, before the result is awaited (decisions are sent here). */
  interact?: (handle: WorkflowHandle) => Promise<void>;
}) {
  const { env, workflowBundle } = environment;
  const store = openSqliteStore(':memory:');
  const modelEnvironment = { fetch: routedFetch as typeof fetch };
  const build = (declared: AgentDefinition<unknown>[]) => createActivities({ config, tools, store, modelEnvironment, agents: declared });
  const activities = build(agents);
  if (laterAgents) {
    const later = build(laterAgents);
    let looks = 0;
    activities.turnSettings = (settingsInput) => (looks++ === 0 ? build(agents) : later).turnSettings(settingsInput);
  }
  const worker = await createWorker({ config, connection: env.nativeConnection, activities, workflowBundle });
  const workflowId = `handoff-turn-${randomUUID()}`;
  provider.enqueueFor(workflowId, ...replies);
  try {
    return await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId: `task-${randomUUID()}`, ...input }],
      });
      await interact?.(handle);
      const result = (await handle.result()) as AgentTurnResult;
      const state = await handle.query(stateQuery);
      const history = await handle.fetchHistory();
      // The Web UI's current details of the turn (the SDK's built-in metadata query).
      const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      const details = metadata.currentDetails ?? '';
      const requests = provider.requests.filter((request) => request.queue === workflowId).map((request) => request.body as Body);
      return { result, state, history, requests, workflowId, details };
    });
  } finally {
    await store.close();
  }
}

type Body = Record<string, unknown>;
const text = (answer: string): FakeReply => ({ kind: 'stream', events: openaiStream.text([answer]) });
const toolCall = (tool: string, args: unknown): FakeReply => ({
  kind: 'stream',
  events: openaiStream.toolCall(tool, [JSON.stringify(args)]),
});
/** One streamed reply asking for several tool calls at once, as OpenAI's chat completions stream them. */
function toolCalls(calls: Array<{ name: string; args: string }>): FakeReply {
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-3', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-test', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const events = calls.map(({ name, args }, index) =>
    chunk({
      ...(index === 0 ? { role: 'assistant', content: null } : {}),
      tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name, arguments: args } }],
    }),
  );
  const usage = { prompt_tokens: 13, completion_tokens: 9, total_tokens: 22 };
  const end = `data: ${JSON.stringify({ id: 'chatcmpl-3', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-test', choices: [], usage })}\n\n`;
  return { kind: 'stream', events: [...events, chunk({}, 'tool_calls'), end, 'data: [DONE]\n\n'] };
}
const systemOf = (body: Body) => (body.messages as Array<{ role: string; content: string }>)[0].content;
const offered = (body: Body) => ((body.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);

describe('a handoff', () => {
  it('runs the next steps as the other agent: its instructions, tools, settings and rules; the result names it and lists the handoff', async () => {
    const refunds = ran('refund_order');
    const lookups = ran('lookup_order');
    const { result, state, requests, history, workflowId, details } = await runTurn({
      input: { prompt: 'Order 7 arrived broken, I want my 3 EUR back.', agent: 'triage' },
      replies: [
        toolCall('transfer_to_billing', { reason: 'a refund' }),
        toolCall('lookup_order', { orderId: '7' }),
        toolCall('refund_order', { orderId: '7', cents: 300 }),
        text('Refunded 3 EUR.'),
      ],
      agents: [triage, billing, support],
    });
    expect(result).toMatchObject({ status: 'completed', answer: 'Refunded 3 EUR.', agent: { name: 'billing', digest: billing.digest } });
    expect(result.handoffs).toEqual([{ from: 'triage', to: 'billing', step: 0, reason: 'a refund' }]);
    expect(state.handoffs).toEqual(result.handoffs);
    expect(state.agent).toEqual({ name: 'billing', digest: billing.digest });
    expect(details).toContain(`**Agent** billing · definition \`${billing.digest.slice(0, 12)}\``);

    // The first step is triage's: its instructions, its settings, its tool and its handoff.
    expect(requests).toHaveLength(4);
    expect(systemOf(requests[0]).startsWith('You sort tickets and hand refunds to billing.')).toBe(true);
    expect(requests[0].temperature).toBe(0.7);
    expect(offered(requests[0])).toEqual(['lookup_order', 'transfer_to_billing']);
    // From the next step on, billing's: its instructions function's text, its settings, its tool only.
    for (const body of requests.slice(1)) {
      expect(systemOf(body)).toMatch(/^You are billing\. You refund orders of task task-\./);
      expect(body.temperature).toBe(0);
      expect(offered(body)).toEqual(['refund_order']);
    }
    // The handoff's result is in the messages billing's model is sent.
    expect(JSON.stringify(requests[1].messages)).toContain('handedTo');

    expect(result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'transfer_to_billing', status: 'success', executions: 0, step: 0 }),
      // lookup_order was triage's: after the switch it is refused, never run.
      expect.objectContaining({ tool: 'lookup_order', status: 'error', code: 'forbidden', executions: 0, step: 1 }),
      // billing's own rule decided its refund (the approvals switched too).
      expect.objectContaining({
        tool: 'refund_order',
        status: 'success',
        executions: 1,
        step: 2,
        approval: expect.objectContaining({ by: 'rule:billing.small' }),
      }),
    ]);
    expect(ran('lookup_order')).toBe(lookups);
    expect(ran('refund_order')).toBe(refunds + 1);

    // The switch's commands: billing's settings looked up once, its instructions function run once.
    const events = history.events ?? [];
    const scheduled = events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'agentInstructions');
    expect(scheduled).toHaveLength(1);
    // The Web UI's line beside each activity names the agent whose step or call it is.
    const summaries = events
      .filter((event) => event.activityTaskScheduledEventAttributes && event.userMetadata?.summary?.data)
      .map((event) => JSON.parse(Buffer.from(event.userMetadata!.summary!.data!).toString('utf8')) as string);
    expect(summaries).toEqual([
      'model step · agent triage',
      'agent instructions',
      'model step · agent billing',
      'model step · agent billing',
      'billing · refund_order 7',
      'model step · agent billing',
    ]);

    // The recorded history replays on the current workflow code.
    const { workflowBundle } = environment;
    await expect(Worker.runReplayHistory({ workflowBundle }, history, workflowId)).resolves.toBeUndefined();
  });

  it('is refused delegation_refused past limits.maxHandoffs, naming the path; the turn goes on as the agent it is', async () => {
    const back = billingAgent({ handoffs: ['triage'] });
    const triageBack = defineAgent({ name: 'triage', instructions: 'You sort tickets.', tools: [lookupOrder], handoffs: ['billing'] });
    const { result, requests, history, workflowId } = await runTurn({
      input: { prompt: 'Refund order 7.', agent: 'triage', limits: { maxHandoffs: 1 } },
      replies: [toolCall('transfer_to_billing', {}), toolCall('transfer_to_triage', { reason: 'not mine' }), text('Refunded.')],
      agents: [triageBack, back],
    });
    expect(result).toMatchObject({ status: 'completed', agent: { name: 'billing' } });
    expect(result.handoffs).toEqual([{ from: 'triage', to: 'billing', step: 0 }]);
    const refused = result.toolCalls[1];
    expect(refused).toMatchObject({ tool: 'transfer_to_triage', status: 'error', code: 'delegation_refused', executions: 0 });
    // What the model was told: the bound and the path.
    const told = JSON.stringify(requests[2].messages);
    expect(told).toContain('limits.maxHandoffs');
    expect(told).toContain('triage → billing');
    expect(offered(requests[2])).toEqual(['refund_order', 'transfer_to_triage']);
    // Kept (with no irreversible write, whose approval path records a patch marker) and replayed.
    keepHistory(HANDOFF_HISTORY, history);
    await expect(Worker.runReplayHistory({ workflowBundle: environment.workflowBundle }, history, workflowId)).resolves.toBeUndefined();
  });

  it('to an agent its agent does not list is forbidden, as from the default agent; one handoff per step', async () => {
    const listed = await runTurn({
      input: { prompt: 'Where is order 7?', agent: 'triage' },
      replies: [toolCall('transfer_to_support', { reason: 'a question' }), text('It was delivered.')],
      agents: [triage, billing, support],
    });
    expect(listed.result).toMatchObject({ status: 'completed', agent: { name: 'triage' } });
    expect(listed.result.handoffs).toBeUndefined();
    expect(listed.result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'transfer_to_support', status: 'error', code: 'forbidden', executions: 0 }),
    ]);
    expect(JSON.stringify(listed.requests[1].messages)).toContain('agent triage may not hand the turn to support (its handoffs: billing)');

    const fromDefault = await runTurn({
      input: { prompt: 'Refund order 7.' },
      replies: [toolCall('transfer_to_billing', {}), text('No.')],
      agents: [triage, billing],
    });
    expect(fromDefault.result.toolCalls).toEqual([expect.objectContaining({ tool: 'transfer_to_billing', code: 'forbidden' })]);
    expect(fromDefault.result.agent).toBeUndefined();
    expect(offered(fromDefault.requests[0])).not.toContain('transfer_to_billing');

    const twice = toolCalls([
      { name: 'transfer_to_billing', args: '{}' },
      { name: 'transfer_to_billing', args: '{"reason":"again"}' },
    ]);
    const doubled = await runTurn({
      input: { prompt: 'Refund order 7.', agent: 'triage' },
      replies: [twice, text('Done.')],
      agents: [triage, billing],
    });
    expect(doubled.result.toolCalls.map((event) => event.code ?? event.status)).toEqual(['success', 'delegation_refused']);
    expect(doubled.result.handoffs).toHaveLength(1);
  });

  it('ends the turn agent_mismatch when the worker declares the target differently by the time of the handoff', async () => {
    const changed = billingAgent({ description: 'Refunds orders, changed.' });
    expect(changed.digest).not.toBe(billing.digest);
    const { result, requests } = await runTurn({
      input: { prompt: 'Refund order 7.', agent: 'triage' },
      replies: [toolCall('transfer_to_billing', {}), text('Refunded.')],
      agents: [triage, billing],
      laterAgents: [triage, changed],
    });
    expect(result).toMatchObject({ status: 'model_failed', error: { type: 'agent_mismatch' }, agent: { name: 'triage' } });
    expect(result.error!.message).toMatch(/handoff to billing: this worker declares agent billing differently/);
    expect(requests).toHaveLength(1);
  });

  it("goes to an agent of the config's agents section, named in agents.<name>.handoffs", async () => {
    const config = configFor({
      agents: {
        desk: { instructions: 'You are the front desk.', tools: ['lookup_order'], handoffs: ['refunds'] },
        refunds: { instructions: 'You refund orders.', tools: ['refund_order'], modelSettings: { temperature: 0 } },
      },
    });
    const { result, requests } = await runTurn({
      input: { prompt: 'Refund order 7.', agent: 'desk' },
      replies: [toolCall('transfer_to_refunds', { reason: 'a refund' }), text('I will refund it.')],
      agents: [],
      config,
    });
    expect(result).toMatchObject({ status: 'completed', agent: { name: 'refunds' } });
    expect(result.handoffs).toEqual([{ from: 'desk', to: 'refunds', step: 0, reason: 'a refund' }]);
    expect(offered(requests[0])).toEqual(['lookup_order', 'transfer_to_refunds']);
    expect(systemOf(requests[1]).startsWith('You refund orders.')).toBe(true);
    expect(offered(requests[1])).toEqual(['refund_order']);
    expect(requests[1].temperature).toBe(0);
  });

  it("takes a person's decision on the new agent's call only from an approver its groups allow, and shows who asks", async () => {
    const refunds = ran('refund_order');
    const guarded = defineAgent({
      name: 'billing',
      instructions: 'You refund.',
      tools: [refundOrder],
      approvals: { groups: { refund_order: ['finance'] } },
    });
    const front = defineAgent({ name: 'triage', instructions: 'You sort.', tools: [lookupOrder], handoffs: [guarded] });
    const refused: string[] = [];
    const { result } = await runTurn({
      input: { prompt: 'Refund 12 EUR of order 8.', agent: 'triage' },
      replies: [toolCall('transfer_to_billing', {}), toolCall('refund_order', { orderId: '8', cents: 1200 }), text('Refunded.')],
      agents: [front, guarded],
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        const [pending] = state.pendingApprovals;
        expect(pending.agent).toEqual({ name: 'billing', digest: guarded.digest });
        const decide = (approver: string) =>
          handle.executeUpdate(decideUpdate, {
            args: [{ callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest, approver }],
          });
        // Triage had no groups: anyone could decide its calls. Billing's allow finance only.
        await decide('ada').catch((error: Error) => refused.push(`ada: ${(error.cause as Error | undefined)?.message}`));
        expect(ran('refund_order')).toBe(refunds);
        await decide('finance');
      },
    });
    expect(refused).toEqual([expect.stringMatching(/^ada: .*finance/)]);
    expect(result.toolCalls[1]).toMatchObject({ tool: 'refund_order', executions: 1, approval: { by: 'finance', via: 'person' } });
    expect(ran('refund_order')).toBe(refunds + 1);
  });
});
