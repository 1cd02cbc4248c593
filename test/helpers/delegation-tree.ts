// The tree tests' parts (test/workflow/delegation.workflow.test.ts on the time-skipping server,
// test/e2e/delegation-close.test.ts on the dev server): tools whose handler executions are counted,
// the agents (subagents, a cycle, a chain), and a runner of one tree on a fresh worker whose turns,
// parents and children alike, are answered by the fake provider from the queue of their workflow id.
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll } from 'vitest';
import { z } from 'zod';
import { createActivities } from '../../activities';
import { defineAgent, type AgentDefinition } from '../../agents/define-agent';
import type { TurnState, AgentTurnInput, AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { openSqliteStore } from '../../intents/sqlite-store';
import { defineTool, type ToolDefinition } from '../../tools/define-tool';
import { createWorker } from '../../worker/create-worker';
import { approvalSignal, stateQuery } from '../../workflows/messages';
import { openaiStream, startFakeProvider, type FakeProvider, type FakeReply } from './fake-provider';
import { testConfig } from './test-config';
import { lookupOrder, refundOrder } from '../fixtures/order-tools';

/** Handler executions by tool and order id, counted where they happen. */
const executions = new Map<string, number>();
function counted(tool: ToolDefinition): ToolDefinition {
  return {
    ...tool,
    handler: (args, context) => {
      const key = `${tool.name}:${(args as { orderId: string }).orderId}`;
      executions.set(key, (executions.get(key) ?? 0) + 1);
      return tool.handler(args, context);
    },
  } as ToolDefinition;
}
/** How many times a tool's handler ran for an order id (ids are unique per test). */
export const ran = (tool: string, orderId: string) => executions.get(`${tool}:${orderId}`) ?? 0;

// A bank that takes the request and answers too late: the call is cut off at its timeout, its outcome unknown.
const payOut = defineTool({
  name: 'pay_out',
  description: 'Pays money out.',
  input: z.strictObject({ orderId: z.string(), cents: z.number().int().positive() }),
  effect: 'irreversible_write',
  timeout: '1s',
  handler: () => new Promise((resolve) => setTimeout(() => resolve({ paid: true }), 3_000)),
});
const tools = [counted(lookupOrder), counted(refundOrder), counted(payOut)];

const researcher = defineAgent({
  name: 'researcher',
  description: 'Finds the facts about an order.',
  instructions: 'Look orders up and report the facts.',
  tools: [lookupOrder],
  output: z.object({ facts: z.array(z.string()) }),
});
const refunds = defineAgent({
  name: 'refunds',
  description: 'Refunds orders.',
  instructions: 'Refund what you are asked to refund.',
  tools: [refundOrder],
});
const lead = defineAgent({
  name: 'lead',
  description: 'Answers customers, asking its subagents.',
  instructions: 'Ask the researcher, then answer.',
  tools: [researcher, refunds, lookupOrder],
});
// A cycle: alpha may call beta, and beta alpha. A chain: top → middle → bottom.
const alpha = defineAgent({ name: 'alpha', description: 'Alpha.', tools: ['agent:beta'] });
const beta = defineAgent({ name: 'beta', description: 'Beta.', tools: ['agent:alpha'] });
const bottom = defineAgent({ name: 'bottom', description: 'Bottom.', tools: [lookupOrder] });
const middle = defineAgent({ name: 'middle', description: 'Middle.', tools: [bottom] });
const top = defineAgent({ name: 'top', description: 'Top.', tools: [middle] });
// A desk whose subagent pays out through the bank that never answers.
const payer = defineAgent({ name: 'payer', description: 'Pays out.', tools: [payOut] });
const desk = defineAgent({ name: 'desk', description: 'Desk.', tools: [payer] });
// A chain whose grandchild writes: head → supervisor → refunds; head lets only alice decide on refunds, at any depth.
const supervisor = defineAgent({ name: 'supervisor', description: 'Supervises refunds.', tools: [refunds] });
const head = defineAgent({
  name: 'head',
  description: 'Head of the desk.',
  tools: [supervisor],
  approvals: { groups: { refund_order: ['alice'] } },
});
/** Every agent the tree tests' worker declares. */
export const agents: AgentDefinition<unknown>[] = [
  researcher,
  refunds,
  lead,
  alpha,
  beta,
  bottom,
  middle,
  top,
  payer,
  desk,
  supervisor,
  head,
];

/** A reply of the fake provider with a final text. */
export const text = (answer: string): FakeReply => ({ kind: 'stream', events: openaiStream.text([answer]) });
/** A reply of the fake provider with one tool call. */
export const toolCall = (tool: string, args: unknown): FakeReply => ({
  kind: 'stream',
  events: openaiStream.toolCall(tool, [JSON.stringify(args)]),
});

/** A server and a workflow bundle, filled in before the calling file's tests run. */
export interface TreeEnvironment {
  env: TestWorkflowEnvironment;
  workflowBundle: WorkflowBundleWithSourceMap;
}

/** The calling file's fake provider and tree runner, on the environment given (started and stopped with the file). */
export function useDelegationTree(environment: TreeEnvironment) {
  const holder: { provider?: FakeProvider } = {};
  beforeAll(async () => {
    holder.provider = await startFakeProvider();
  });
  afterAll(() => holder.provider?.close());
  const fake = () => holder.provider!;

  /** A fetch that names the turn asking, so that each turn (parent or child) is answered from its own queue. */
  async function routedFetch(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) {
    const { Context } = await import('@temporalio/activity');
    const headers = new Headers(init?.headers);
    headers.set('x-tollgate-fake-queue', Context.current().info.workflowExecution?.workflowId ?? '');
    return fetch(input, { ...init, headers });
  }

  function configFor(extra: Record<string, unknown>): TollgateConfig {
    const base = testConfig({
      ...extra,
      retry: { initialInterval: '100ms', maximumInterval: '1s' },
      model: { default: 'fake', models: { fake: { provider: 'openai-compatible', model: 'gpt-test', baseURL: fake().baseURL } } },
    });
    return { ...base, temporal: { ...base.temporal, taskQueue: `delegation-${randomUUID()}` } };
  }

  /**
   * Runs one tree on a fresh worker: `replies` by workflow id (the root's is `workflowId`; a child's
   * is `childWorkflowId(parent, callId)`), `interact` after the start and before the result is awaited.
   */
  async function runTree({
    input,
    replies,
    interact,
    config: extra = {},
  }: {
    input: Omit<AgentTurnInput, 'taskId'>;
    /** Config sections of the worker, over the test config's. */
    config?: Record<string, unknown>;
    replies: (workflowId: string) => Array<[string, FakeReply[]]>;
    interact?: (handle: WorkflowHandle, workflowId: string) => Promise<void>;
  }) {
    const { env, workflowBundle } = environment;
    const config = configFor(extra);
    const store = openSqliteStore(':memory:');
    const activities = createActivities({ config, tools, store, modelEnvironment: { fetch: routedFetch as typeof fetch }, agents });
    const worker = await createWorker({ config, connection: env.nativeConnection, activities, workflowBundle });
    const workflowId = `tree-${randomUUID()}`;
    for (const [queue, queued] of replies(workflowId)) fake().enqueueFor(queue, ...queued);
    const taskId = `task-${randomUUID()}`;
    try {
      return await worker.runUntil(async () => {
        const handle = await env.client.workflow.start('agentTurn', {
          workflowId,
          taskQueue: config.temporal.taskQueue,
          args: [{ taskId, ...input }],
        });
        await interact?.(handle, workflowId);
        const outcome: { result?: AgentTurnResult; failure?: unknown } = await handle.result().then(
          (result) => ({ result: result as AgentTurnResult }),
          (error: unknown) => ({ failure: error }),
        );
        const history = await handle.fetchHistory();
        return { ...outcome, history, workflowId, taskId, taskQueue: config.temporal.taskQueue };
      });
    } finally {
      await store.close();
    }
  }

  /** The state of a child turn once it is ready (the child may not have started yet when first asked). */
  async function childState(workflowId: string, ready: (state: TurnState) => boolean): Promise<TurnState> {
    const handle = environment.env.client.workflow.getHandle(workflowId);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const state = await handle.query(stateQuery).catch(() => undefined);
      if (state && ready(state)) return state;
      if (Date.now() > deadline) throw new Error(`child ${workflowId} never became ready: ${JSON.stringify(state)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Approves the one call a child turn waits on, by a signal to that child. */
  async function approveInChild(workflowId: string): Promise<void> {
    const state = await childState(workflowId, (current) => current.pendingApprovals.length > 0);
    const [pending] = state.pendingApprovals;
    await environment.env.client.workflow
      .getHandle(workflowId)
      .signal(approvalSignal, { callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest, approver: 'alice' });
  }

  return { runTree, childState, approveInChild, provider: fake };
}
