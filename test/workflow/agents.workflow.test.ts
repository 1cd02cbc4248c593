// Agents (defineAgent, createWorker({ agents }), config agents.<name>) on the time-skipping server,
// against the fake OpenAI-compatible provider, which records every request the model server got:
// the agent's instructions and settings are in them, its tools are the only ones offered and run,
// its typed output is checked and sent back, and a worker declaring it differently refuses it.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createActivities } from '../../activities';
import { defineAgent, type AgentDefinition } from '../../agents/define-agent';
import type { AgentOutput } from '../../common/contract/agent';
import type { AgentTurnInput, AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { ToolDefinition } from '../../tools/define-tool';
import { createWorker } from '../../worker/create-worker';
import { closeConversationSignal, decideUpdate, sendUpdate, stateQuery } from '../../workflows/messages';
import { waitForState } from '../helpers/turn-runner';
import { openaiStream, startFakeProvider, type FakeProvider, type FakeReply } from '../helpers/fake-provider';
import { testConfig } from '../helpers/test-config';
import { HISTORY_FOLDER, keepHistory } from '../helpers/histories';

/** Recorded agent turns, replayed by test/workflow/replay.test.ts with the others (TOLLGATE_RECORD_HISTORIES=1 writes them). */
const OUTPUT_SENT_BACK_HISTORY = path.join(HISTORY_FOLDER, 'agent-output-sent-back.json');
const INSTRUCTIONS_FUNCTION_HISTORY = path.join(HISTORY_FOLDER, 'agent-instructions-function.json');
import { useTimeSkippingEnvironment } from '../helpers/turn-runner';
import { lookupOrder, refundOrder } from '../fixtures/order-tools';

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

const support = defineAgent({
  name: 'support',
  description: 'Answers customers about their orders.',
  instructions: 'You are the support desk of a small shop. Look the order up before you answer.',
  modelSettings: { temperature: 0.2, topP: 0.9, maxOutputTokens: 800, seed: 7, stopSequences: ['END'] },
  tools: [lookupOrder],
  output: z.object({ refunded: z.boolean(), message: z.string() }),
});

/** The config of one worker: its own task queue, the fake provider as the model `fake`. */
function configFor(extra: Record<string, unknown> = {}): TollgateConfig {
  const base = testConfig({
    retry: { initialInterval: '100ms', maximumInterval: '1s' },
    model: { default: 'fake', models: { fake: { provider: 'openai-compatible', model: 'gpt-test', baseURL: provider.baseURL } } },
    ...extra,
  });
  return { ...base, temporal: { ...base.temporal, taskQueue: `agents-${randomUUID()}` } };
}

/** Requests the provider got for one turn (the queue is named by the turn's workflow id). */
function requestsOf(workflowId: string): Array<Record<string, unknown>> {
  return provider.requests.filter((request) => request.queue === workflowId).map((request) => request.body as Record<string, unknown>);
}

/** A fetch that names the turn asking, so that each turn is answered from its own queue. */
async function routedFetch(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) {
  const { Context } = await import('@temporalio/activity');
  const headers = new Headers(init?.headers);
  headers.set('x-tollgate-fake-queue', Context.current().info.workflowExecution?.workflowId ?? '');
  return fetch(input, { ...init, headers });
}

/**
 * Runs one turn on a fresh worker: `agents` on the worker that runs everything, `modelStepAgents` on
 * the worker whose model step is used (a fleet whose workers declare an agent differently).
 */
async function runTurn({
  input,
  replies,
  agents,
  modelStepAgents,
  runToolAgents,
  config = configFor(),
  workerOptions,
  interact,
}: {
  input: Omit<AgentTurnInput, 'taskId'>;
  replies: FakeReply[];
  agents: AgentDefinition<unknown>[];
  modelStepAgents?: AgentDefinition<unknown>[];
  runToolAgents?: AgentDefinition<unknown>[];
  config?: TollgateConfig;
  workerOptions?: Parameters<typeof createWorker>[0]['workerOptions'];
  /** Runs after the start, before the result is awaited (decisions are sent here). */
  interact?: (handle: WorkflowHandle) => Promise<void>;
}) {
  const { env, workflowBundle } = environment;
  const store = openSqliteStore(':memory:');
  const modelEnvironment = { fetch: routedFetch as typeof fetch };
  const build = (declared: AgentDefinition<unknown>[]) => createActivities({ config, tools, store, modelEnvironment, agents: declared });
  const activities = {
    ...build(agents),
    ...(modelStepAgents ? { modelStep: build(modelStepAgents).modelStep } : {}),
    ...(runToolAgents ? { runTool: build(runToolAgents).runTool } : {}),
  };
  const worker = await createWorker({ config, connection: env.nativeConnection, activities, workflowBundle, workerOptions });
  const workflowId = `agent-turn-${randomUUID()}`;
  provider.enqueueFor(workflowId, ...replies);
  try {
    return await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId: `task-${randomUUID()}`, ...input }],
      });
      await interact?.(handle);
      const outcome: { result?: AgentTurnResult; failure?: unknown } = await handle.result().then(
        (result) => ({ result: result as AgentTurnResult }),
        (error: unknown) => ({ failure: error }),
      );
      const state = await handle.query(stateQuery);
      const history = await handle.fetchHistory();
      return { ...outcome, state, history, requests: requestsOf(workflowId), workflowId };
    });
  } finally {
    await store.close();
  }
}

const text = (answer: string): FakeReply => ({ kind: 'stream', events: openaiStream.text([answer]) });
const toolCall = (tool: string, args: unknown): FakeReply => ({
  kind: 'stream',
  events: openaiStream.toolCall(tool, [JSON.stringify(args)]),
});
const systemOf = (body: Record<string, unknown>) => (body.messages as Array<{ role: string; content: string }>)[0];
const offered = (body: Record<string, unknown>) =>
  ((body.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);

describe('an agent turn', () => {
  it("sends the agent's instructions, settings and tools to the model, and returns its typed output and name", async () => {
    const answer = JSON.stringify({ refunded: false, message: 'Order 7 was delivered on time.' });
    const { result, state, requests } = await runTurn({
      input: { prompt: 'Where is order 7?', agent: 'support' },
      replies: [toolCall('lookup_order', { orderId: '7' }), text(answer)],
      agents: [support],
    });
    expect(result).toMatchObject({ status: 'completed', answer, agent: { name: 'support', digest: support.digest } });
    const output: AgentOutput<typeof support> | undefined = result!.output as AgentOutput<typeof support>;
    expect(output).toEqual({ refunded: false, message: 'Order 7 was delivered on time.' });
    expect(state.agent).toEqual({ name: 'support', digest: support.digest });
    expect(requests).toHaveLength(2);
    for (const body of requests) {
      expect(systemOf(body)).toMatchObject({ role: 'system' });
      const system = systemOf(body).content;
      // The agent's instructions first, then Tollgate's rules on tool results, then the schema of the answer.
      expect(system.startsWith('You are the support desk of a small shop. Look the order up before you answer.')).toBe(true);
      expect(system).toContain('do not repeat a call that was denied');
      expect(system).not.toContain('You are an agent working for a person');
      expect(system).toContain('"refunded"');
      expect(body).toMatchObject({ temperature: 0.2, top_p: 0.9, max_tokens: 800, seed: 7, stop: ['END'] });
      expect(body.response_format).toBeDefined();
      expect(offered(body)).toEqual(['lookup_order']);
    }
  });

  it("refuses a call outside the agent's tools as forbidden, with 0 executions, and never schedules it", async () => {
    const before = ran('refund_order');
    const { result, history } = await runTurn({
      input: { prompt: 'Refund order 7.', agent: 'support' },
      replies: [toolCall('refund_order', { orderId: '7', cents: 1200 }), text(JSON.stringify({ refunded: false, message: 'I cannot.' }))],
      agents: [support],
    });
    expect(result!.toolCalls).toEqual([
      expect.objectContaining({ tool: 'refund_order', status: 'error', code: 'forbidden', executions: 0 }),
    ]);
    expect(ran('refund_order')).toBe(before);
    const scheduled = (history.events ?? []).filter(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool',
    );
    expect(scheduled).toHaveLength(0);
    expect(result!.status).toBe('completed');
  });

  it("narrows the agent's tools by the turn's own list: a tool in only one of them is refused", async () => {
    const before = ran('lookup_order');
    const { result, requests } = await runTurn({
      input: { prompt: 'Where is order 7?', agent: 'support', tools: ['refund_order'] },
      replies: [toolCall('lookup_order', { orderId: '7' }), text(JSON.stringify({ refunded: false, message: 'No tools.' }))],
      agents: [support],
    });
    expect(offered(requests[0])).toEqual([]);
    expect(result!.toolCalls).toEqual([expect.objectContaining({ tool: 'lookup_order', code: 'forbidden', executions: 0 })]);
    expect(ran('lookup_order')).toBe(before);
  });

  it('sends an answer that does not fit the output schema back with what was wrong, and completes once one fits', async () => {
    const { result, requests, history } = await runTurn({
      input: { prompt: 'Refund?', agent: 'support' },
      replies: [text('Sure, refunded.'), text(JSON.stringify({ refunded: true, message: 'Refunded 12 EUR.' }))],
      agents: [support],
    });
    keepHistory(OUTPUT_SENT_BACK_HISTORY, history);
    expect(result).toMatchObject({ status: 'completed', output: { refunded: true, message: 'Refunded 12 EUR.' }, steps: 2 });
    const retry = (requests[1].messages as Array<{ role: string; content: unknown }>).at(-1)!;
    expect(retry.role).toBe('user');
    expect(String(retry.content)).toMatch(/does not fit the output schema:\nthe answer is not JSON/);
  });

  it('ends output_invalid after outputRetries answers that do not fit, keeping the last one and what was wrong', async () => {
    const strict = defineAgent({ ...agentSpec(), name: 'strict', outputRetries: 1 });
    const last = JSON.stringify({ refunded: 'yes' });
    const { result, requests } = await runTurn({
      input: { prompt: 'Refund?', agent: 'strict' },
      replies: [text(JSON.stringify({ message: 3 })), text(last)],
      agents: [strict],
    });
    expect(requests).toHaveLength(2);
    expect(result).toMatchObject({ status: 'output_invalid', answer: last, error: { type: 'output_invalid' } });
    expect(result!.output).toBeUndefined();
    expect(result!.error!.message).toMatch(/refunded: .*boolean/);
    expect(result!.error!.message).toMatch(/message: /);
    const retry = (requests[1].messages as Array<{ role: string; content: unknown }>).at(-1)!;
    expect(String(retry.content)).toMatch(/message: .*string/);
  });

  it('fails a turn that names an agent the worker does not declare with invalid_input, naming it and the known ones', async () => {
    const { failure, requests } = await runTurn({ input: { prompt: 'Hello', agent: 'sales' }, replies: [], agents: [support] });
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as { type?: string; message: string };
    expect(cause.type).toBe('invalid_input');
    expect(cause.message).toMatch(/agent "sales" is not declared on the worker \(known: support\)/);
    expect(requests).toHaveLength(0);
  });

  it("takes the agent's limits over the config's, and a turn's own only when they are lower", async () => {
    const brief = defineAgent({ ...agentSpec(), name: 'brief', limits: { maxSteps: 1, maxToolCalls: 5 } });
    const asked = toolCall('lookup_order', { orderId: '7' });
    const raised = await runTurn({
      input: { prompt: 'Order 7?', agent: 'brief', limits: { maxSteps: 5 } },
      replies: [asked],
      agents: [brief],
    });
    // The turn asked for 5 steps; its agent allows 1: the step's call ran, and no second step was asked for.
    expect(raised.result).toMatchObject({ status: 'step_limit', steps: 1 });
    expect(raised.requests).toHaveLength(1);
    const lowered = await runTurn({
      input: { prompt: 'Order 7?', agent: 'brief', limits: { maxToolCalls: 0 } },
      replies: [asked],
      agents: [brief],
    });
    // The turn lowers its agent's 5 tool calls to 0: the call asked for is over the limit and never runs.
    expect(lowered.result).toMatchObject({ status: 'tool_call_limit', toolCalls: [] });
  });

  it('runs a turn without an agent as before: the default system message and every tool', async () => {
    const { result, requests } = await runTurn({ input: { prompt: 'Hello' }, replies: [text('Hi.')], agents: [support] });
    expect(result).toMatchObject({ status: 'completed', answer: 'Hi.' });
    expect(result!.agent).toBeUndefined();
    expect(systemOf(requests[0]).content.startsWith('You are an agent working for a person.')).toBe(true);
    expect(offered(requests[0]).sort()).toEqual(['lookup_order', 'refund_order']);
    expect(requests[0].temperature).toBeUndefined();
  });
});

/** The support agent's fields, to declare variants of it. */
function agentSpec() {
  return {
    name: 'support',
    description: 'Answers customers about their orders.',
    instructions: 'You are the support desk of a small shop. Look the order up before you answer.',
    modelSettings: { temperature: 0.2, topP: 0.9, maxOutputTokens: 800, seed: 7, stopSequences: ['END'] },
    tools: [lookupOrder],
    output: z.object({ refunded: z.boolean(), message: z.string() }),
  };
}

describe('an agent declared differently', () => {
  it('is refused by a model step whose worker declares it with other instructions: model_failed, agent_mismatch, no request', async () => {
    const other = defineAgent({ ...agentSpec(), instructions: 'You refund everything.' });
    expect(other.digest).not.toBe(support.digest);
    const { result, requests } = await runTurn({
      input: { prompt: 'Refund?', agent: 'support' },
      replies: [text('{}')],
      agents: [support],
      modelStepAgents: [other],
    });
    expect(result).toMatchObject({ status: 'model_failed', error: { type: 'agent_mismatch' } });
    expect(result!.error!.message).toMatch(/declares agent support differently/);
    expect(requests).toHaveLength(0);
  });

  it('has its calls refused forbidden, 0 executions, by a worker that declares it with other tools', async () => {
    const before = ran('lookup_order');
    const other = defineAgent({ ...agentSpec(), tools: [lookupOrder, refundOrder] });
    const { result } = await runTurn({
      input: { prompt: 'Where is order 7?', agent: 'support' },
      replies: [toolCall('lookup_order', { orderId: '7' }), text(JSON.stringify({ refunded: false, message: 'Unknown.' }))],
      agents: [support],
      runToolAgents: [other],
    });
    expect(result!.toolCalls).toEqual([expect.objectContaining({ tool: 'lookup_order', code: 'forbidden', executions: 0 })]);
    expect(ran('lookup_order')).toBe(before);
  });
});

describe("an agent's instructions function", () => {
  it('runs once per turn, its text recorded: every step (replayed from history at each task) gets it', async () => {
    let calls = 0;
    const tailored = defineAgent({
      name: 'tailored',
      instructions: async (input) => {
        calls++;
        return `You answer ${input.taskId.length > 0 ? 'customer' : 'nobody'} questions. Ticket: ${input.prompt}`;
      },
      tools: ['lookup_order'],
    });
    const { result, requests, history } = await runTurn({
      input: { prompt: 'Where is order 9?', agent: 'tailored' },
      replies: [toolCall('lookup_order', { orderId: '9' }), text('Delivered.')],
      agents: [tailored],
      // No cached workflows: each workflow task replays the turn from its history, instructions included.
      workerOptions: { maxCachedWorkflows: 0 },
    });
    expect(result).toMatchObject({ status: 'completed', answer: 'Delivered.' });
    keepHistory(INSTRUCTIONS_FUNCTION_HISTORY, history);
    expect(calls).toBe(1);
    expect(requests).toHaveLength(2);
    for (const body of requests) expect(systemOf(body).content).toMatch(/^You answer customer questions\. Ticket: Where is order 9\?/);
    const scheduled = (history.events ?? []).filter(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'agentInstructions',
    );
    expect(scheduled).toHaveLength(1);
  });
});

describe('agents in the config', () => {
  it('runs an agent of the agents section, its JSON Schema output checked', async () => {
    const config = configFor({
      agents: {
        triage: {
          instructions: 'You sort tickets.',
          tools: ['lookup_order'],
          modelSettings: { temperature: 0 },
          output: { type: 'object', properties: { queue: { enum: ['billing', 'shipping'] } }, required: ['queue'] },
        },
      },
    });
    const { result, requests } = await runTurn({
      input: { prompt: 'My parcel is late.', agent: 'triage' },
      replies: [text('{"queue":"parcels"}'), text('{"queue":"shipping"}')],
      agents: [],
      config,
    });
    expect(result).toMatchObject({ status: 'completed', output: { queue: 'shipping' }, agent: { name: 'triage' } });
    expect(systemOf(requests[0]).content.startsWith('You sort tickets.')).toBe(true);
    expect(requests[0].temperature).toBe(0);
    expect(String((requests[1].messages as Array<{ content: unknown }>).at(-1)!.content)).toMatch(
      /queue: must be equal to one of the allowed values/,
    );
  });
});

describe("an agent's approvals", () => {
  const refunder = defineAgent({
    ...agentSpec(),
    name: 'refunder',
    tools: [lookupOrder, refundOrder],
    approvals: {
      groups: { refund_order: ['finance', 'ada'] },
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
  const done = text(JSON.stringify({ refunded: true, message: 'Refunded.' }));

  it('decides by its own rules before the worker’s, recorded as rule:<agent>.<rule>', async () => {
    const before = ran('refund_order');
    const { result, state } = await runTurn({
      input: { prompt: 'Refund 3 EUR of order 7.', agent: 'refunder' },
      replies: [toolCall('refund_order', { orderId: '7', cents: 300 }), done],
      agents: [refunder],
    });
    expect(result!.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'refund_order',
        status: 'success',
        executions: 1,
        approval: expect.objectContaining({ by: 'rule:refunder.small' }),
      }),
    ]);
    expect(state.decisions).toEqual([expect.objectContaining({ approver: 'rule:refunder.small' })]);
    expect(ran('refund_order')).toBe(before + 1);
  });

  it('asks a person past its rules, shows which agent asks, and takes only an approver its groups and the worker’s both allow', async () => {
    const before = ran('refund_order');
    const config = configFor({ approvals: { groups: { refund_order: ['finance', 'bob'] } } });
    const refused: string[] = [];
    const { result } = await runTurn({
      input: { prompt: 'Refund 12 EUR of order 7.', agent: 'refunder' },
      replies: [toolCall('refund_order', { orderId: '7', cents: 1200 }), done],
      agents: [refunder],
      config,
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        const [pending] = state.pendingApprovals;
        expect(pending.agent).toEqual({ name: 'refunder', digest: refunder.digest });
        const decide = (approver: string) =>
          handle.executeUpdate(decideUpdate, {
            args: [{ callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest, approver }],
          });
        // ada is in the agent's group, not the worker's; bob in the worker's, not the agent's.
        for (const approver of ['ada', 'bob'])
          await decide(approver).catch((error: Error) => refused.push(`${approver}: ${(error.cause as Error | undefined)?.message}`));
        expect(ran('refund_order')).toBe(before);
        await decide('finance');
      },
    });
    expect(refused).toEqual([expect.stringMatching(/^ada: .*finance/), expect.stringMatching(/^bob: .*finance/)]);
    expect(result!.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'refund_order',
        status: 'success',
        executions: 1,
        approval: expect.objectContaining({ by: 'finance' }),
      }),
    ]);
    expect(ran('refund_order')).toBe(before + 1);
  });
});

describe('a conversation with an agent', () => {
  it('runs each of its turns as the agent', async () => {
    const { env, workflowBundle } = environment;
    const config = configFor();
    const store = openSqliteStore(':memory:');
    const activities = createActivities({
      config,
      tools,
      store,
      modelEnvironment: { fetch: routedFetch as typeof fetch },
      agents: [support],
    });
    const worker = await createWorker({ config, connection: env.nativeConnection, activities, workflowBundle });
    const conversationId = `agent-conversation-${randomUUID()}`;
    provider.enqueueFor(`${conversationId}-turn-1`, text(JSON.stringify({ refunded: false, message: 'Hello.' })));
    try {
      const result = await worker.runUntil(async () => {
        const conversation = await env.client.workflow.start('conversation', {
          workflowId: conversationId,
          taskQueue: config.temporal.taskQueue,
          args: [{ conversationId, agent: 'support' }],
        });
        const sent = (await conversation.executeUpdate(sendUpdate, { args: [{ text: 'Hi' }] })) as AgentTurnResult;
        await conversation.signal(closeConversationSignal);
        return sent;
      });
      expect(result).toMatchObject({ status: 'completed', agent: { name: 'support' }, output: { refunded: false, message: 'Hello.' } });
      expect(systemOf(requestsOf(`${conversationId}-turn-1`)[0]).content.startsWith('You are the support desk')).toBe(true);
    } finally {
      await store.close();
    }
  });
});
