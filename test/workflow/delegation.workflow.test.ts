// Subagents as tools, run as child turns, on the time-skipping server. The children's model is the
// fake OpenAI-compatible provider, answering each turn from the queue named by its workflow id (a
// child's id derives from its parent's and the call's); a parent with several calls in one step
// plays a script. Handler executions are counted where they happen.
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { AgentTurnResult } from '../../common/contract/turn';
import { approvalSignal } from '../../workflows/messages';
import { childWorkflowId } from '../../workflows/delegation/delegate-call';
import { ran, text, toolCall, useDelegationTree } from '../helpers/delegation-tree';
import { HISTORY_FOLDER, keepHistory } from '../helpers/histories';
import { until } from '../helpers/until';
import { scripted, useTimeSkippingEnvironment } from '../helpers/turn-runner';

/** A recorded tree (a parent, its subagent's child turn with a typed output), replayed by test/workflow/replay.test.ts. */
const TREE_PARENT_HISTORY = path.join(HISTORY_FOLDER, 'delegation', 'delegate-parent.json');
const TREE_CHILD_HISTORY = path.join(HISTORY_FOLDER, 'delegation', 'delegate-child.json');

const environment = useTimeSkippingEnvironment();
const { runTree, childState, approveInChild, provider } = useDelegationTree(environment);

describe('a subagent called as a tool', () => {
  it('runs as one child turn with the derived id, on the parent task queue and task, and returns its typed output', async () => {
    const facts = { facts: ['order 7 was delivered'] };
    const { result, workflowId, taskId, taskQueue, history } = await runTree({
      input: { prompt: 'Where is order 7?', agent: 'lead' },
      replies: (root) => [
        [root, [toolCall('researcher', { request: 'Find out about order 7.' }), text('Delivered.')]],
        [childWorkflowId(root, 'call-0-0'), [toolCall('lookup_order', { orderId: 'r1' }), text(JSON.stringify(facts))]],
      ],
    });
    const childId = childWorkflowId(workflowId, 'call-0-0');
    expect(result).toMatchObject({ status: 'completed', answer: 'Delivered.' });
    expect(result!.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'researcher',
        effect: 'read',
        status: 'success',
        executions: 1,
        delegate: { agent: 'researcher', workflowId: childId, status: 'completed' },
      }),
    ]);
    expect(ran('lookup_order', 'r1')).toBe(1);
    // The parent's second step was sent the child's typed output as the call's result.
    const second = provider().requests.filter((request) => request.queue === workflowId)[1].body as {
      messages: Array<{ role: string; content: unknown }>;
    };
    expect(JSON.stringify(second.messages.at(-1)!.content)).toContain('order 7 was delivered');

    const child = environment.env.client.workflow.getHandle(childId);
    const childResult = (await child.result()) as AgentTurnResult;
    expect(childResult).toMatchObject({ status: 'completed', output: facts, agent: { name: 'researcher' } });
    const described = await child.describe();
    expect(described.taskQueue).toBe(taskQueue);
    expect(described.raw.workflowExecutionInfo?.parentExecution?.workflowId).toBe(workflowId);
    expect(described.searchAttributes.TollgateTaskId).toEqual([taskId]);
    // The parent's usage is its own two steps (13 + 11 in, 9 + 7 out) and the child's two.
    expect(childResult.usage).toEqual({ inputTokens: 24, outputTokens: 16 });
    expect(result!.usage).toEqual({ inputTokens: 48, outputTokens: 32 });
    keepHistory(TREE_PARENT_HISTORY, history);
    keepHistory(TREE_CHILD_HISTORY, await child.fetchHistory());
  });

  it("runs the child's irreversible write once when a person approves it by a signal to the child; the call's effect is the strongest", async () => {
    const { result, workflowId } = await runTree({
      input: { prompt: 'Refund order 8.', agent: 'lead' },
      replies: (root) => [
        [root, [toolCall('refunds', { request: 'Refund order 8, 12 EUR.' }), text('Refunded.')]],
        [childWorkflowId(root, 'call-0-0'), [toolCall('refund_order', { orderId: 'a8', cents: 1200 }), text('Done: 1200 cents.')]],
      ],
      interact: (_, root) => approveInChild(childWorkflowId(root, 'call-0-0')),
    });
    expect(ran('refund_order', 'a8')).toBe(1);
    expect(result!.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'refunds',
        effect: 'irreversible_write',
        status: 'success',
        executions: 1,
        delegate: expect.objectContaining({ status: 'completed' }),
      }),
    ]);
    const child = environment.env.client.workflow.getHandle(childWorkflowId(workflowId, 'call-0-0'));
    const childResult = (await child.result()) as AgentTurnResult;
    expect(childResult.toolCalls).toEqual([
      expect.objectContaining({ tool: 'refund_order', executions: 1, approval: { decision: 'approve', by: 'alice', via: 'person' } }),
    ]);
  });

  it('makes the call outcome_unknown when a call of the child stayed unknown, and never runs it again', async () => {
    const { result, workflowId } = await runTree({
      input: { prompt: 'Pay order 12 out.', agent: 'desk' },
      replies: (root) => [
        [root, [toolCall('payer', { request: 'Pay 1200 cents for order 12.' }), text('Whether it was paid is not known.')]],
        [childWorkflowId(root, 'call-0-0'), [toolCall('pay_out', { orderId: 'u12', cents: 1200 }), text('The bank did not answer.')]],
      ],
      // Approved; the bank's answer never comes, and the worker reports an unknown outcome at once (no person resolves it).
      config: { outcomes: { onUnknown: 'report' } },
      interact: (_, root) => approveInChild(childWorkflowId(root, 'call-0-0')),
    });
    expect(ran('pay_out', 'u12')).toBe(1);
    const child = (await environment.env.client.workflow.getHandle(childWorkflowId(workflowId, 'call-0-0')).result()) as AgentTurnResult;
    expect(child).toMatchObject({
      status: 'completed',
      toolCalls: [expect.objectContaining({ tool: 'pay_out', code: 'outcome_unknown' })],
    });
    expect(result!.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'payer',
        effect: 'irreversible_write',
        code: 'outcome_unknown',
        executions: 1,
        delegate: expect.objectContaining({ status: 'completed' }),
      }),
    ]);
    expect(result).toMatchObject({ status: 'completed', answer: 'Whether it was paid is not known.' });
  });

  it('withdraws the wait of a child when its parent is cancelled: the approval signalled after it runs nothing', async () => {
    let childId = '';
    const { failure } = await runTree({
      input: { prompt: 'Refund order 9.', agent: 'lead' },
      replies: (root) => [
        [root, [toolCall('refunds', { request: 'Refund order 9.' })]],
        [childWorkflowId(root, 'call-0-0'), [toolCall('refund_order', { orderId: 'c9', cents: 900 })]],
      ],
      interact: async (handle, root) => {
        childId = childWorkflowId(root, 'call-0-0');
        const waiting = await childState(childId, (state) => state.pendingApprovals.length > 0);
        await handle.cancel();
        // The cancel is followed to the child before the parent's result is awaited: awaiting a result lets the
        // time-skipping server jump to the next timer (the approval's expiry, 24 h on) while the cancel is still on
        // its way from parent to child, which a real server's clock never does.
        const child = environment.env.client.workflow.getHandle(childId);
        const closed = await until('the child closed', async () => {
          const { status } = await child.describe();
          return status.name === 'RUNNING' ? undefined : status.name;
        });
        expect(closed).toBe('CANCELLED');
        await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
        // The decision arrives after the cancel: the child is closed, nothing runs.
        const [pending] = waiting.pendingApprovals;
        await child
          .signal(approvalSignal, { callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest })
          .catch(() => undefined);
      },
    });
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(ran('refund_order', 'c9')).toBe(0);
  });

  it('runs one business intent once when two sibling subagents of one step both ask for it', async () => {
    const { result, workflowId } = await runTree({
      input: {
        prompt: 'Refund order 5.',
        agent: 'lead',
        model: scripted([
          {
            toolCalls: [
              { tool: 'refunds', args: { request: 'Refund order 5.' } },
              { tool: 'refunds', args: { request: 'Please refund order 5.' } },
            ],
          },
          { text: 'Refunded once.' },
        ]),
      },
      replies: (root) => [
        [childWorkflowId(root, 'call-0-0'), [toolCall('refund_order', { orderId: 's5', cents: 500 }), text('Refunded.')]],
        [childWorkflowId(root, 'call-0-1'), [toolCall('refund_order', { orderId: 's5', cents: 500 }), text('Refunded.')]],
      ],
      interact: async (_, root) => {
        // Both children run at once and wait; the first approved runs, the second finds the intent taken.
        await approveInChild(childWorkflowId(root, 'call-0-0'));
        await childState(childWorkflowId(root, 'call-0-0'), (state) => state.status !== 'running');
        const second = await childState(
          childWorkflowId(root, 'call-0-1'),
          (state) => state.pendingApprovals.length > 0 || state.status !== 'running',
        );
        if (second.pendingApprovals.length > 0) await approveInChild(childWorkflowId(root, 'call-0-1'));
      },
    });
    expect(ran('refund_order', 's5')).toBe(1);
    expect(result!.toolCalls.map((event) => event.delegate?.workflowId)).toEqual([
      childWorkflowId(workflowId, 'call-0-0'),
      childWorkflowId(workflowId, 'call-0-1'),
    ]);
    expect(result!.toolCalls.reduce((sum, event) => sum + event.executions, 0)).toBe(1);
  });
});

describe('subagents of one step', () => {
  it('runs at most maxConcurrentSubagents children at once: the second starts once the first ended', async () => {
    const { result, workflowId } = await runTree({
      input: {
        prompt: 'Refund orders 1 and 11.',
        agent: 'lead',
        limits: { maxConcurrentSubagents: 1 },
        model: scripted([
          {
            toolCalls: [
              { tool: 'refunds', args: { request: 'Refund order 1.' } },
              { tool: 'refunds', args: { request: 'Refund order 11.' } },
            ],
          },
          { text: 'Both refunded.' },
        ]),
      },
      replies: (root) => [
        [childWorkflowId(root, 'call-0-0'), [toolCall('refund_order', { orderId: 'q1', cents: 100 }), text('Refunded 1.')]],
        [childWorkflowId(root, 'call-0-1'), [toolCall('refund_order', { orderId: 'q11', cents: 100 }), text('Refunded 11.')]],
      ],
      interact: async (_, root) => {
        await childState(childWorkflowId(root, 'call-0-0'), (state) => state.pendingApprovals.length > 0);
        // The first waits for a person: the second has not been started.
        await expect(environment.env.client.workflow.getHandle(childWorkflowId(root, 'call-0-1')).describe()).rejects.toThrow();
        await approveInChild(childWorkflowId(root, 'call-0-0'));
        await approveInChild(childWorkflowId(root, 'call-0-1'));
      },
    });
    expect(ran('refund_order', 'q1')).toBe(1);
    expect(ran('refund_order', 'q11')).toBe(1);
    expect(result!.toolCalls.map((event) => event.delegate?.status)).toEqual(['completed', 'completed']);
    const first = await environment.env.client.workflow.getHandle(childWorkflowId(workflowId, 'call-0-0')).describe();
    const second = await environment.env.client.workflow.getHandle(childWorkflowId(workflowId, 'call-0-1')).describe();
    expect(second.startTime.getTime()).toBeGreaterThanOrEqual(first.closeTime!.getTime());
  });
});

describe("a subagent's budget", () => {
  it("is a share of the parent's remaining steps: the child ends step_limit, the parent sees it and its usage holds the child's", async () => {
    const { result, workflowId } = await runTree({
      // 4 steps: the parent's first, one kept for its answer, 2 for the child.
      input: { prompt: 'Order 6?', agent: 'lead', limits: { maxSteps: 4 } },
      replies: (root) => [
        [root, [toolCall('researcher', { request: 'Order 6.' }), text('I could not find out.')]],
        [
          childWorkflowId(root, 'call-0-0'),
          [
            toolCall('lookup_order', { orderId: 'b6' }),
            toolCall('lookup_order', { orderId: 'b6' }),
            toolCall('lookup_order', { orderId: 'b6' }),
          ],
        ],
      ],
    });
    const child = (await environment.env.client.workflow.getHandle(childWorkflowId(workflowId, 'call-0-0')).result()) as AgentTurnResult;
    expect(child).toMatchObject({ status: 'step_limit', steps: 2 });
    expect(ran('lookup_order', 'b6')).toBe(2);
    expect(result!.toolCalls[0]).toMatchObject({
      tool: 'researcher',
      status: 'error',
      code: 'tool_failure',
      executions: 2,
      delegate: { agent: 'researcher', status: 'step_limit' },
    });
    expect(result).toMatchObject({ status: 'completed', answer: 'I could not find out.' });
    expect(result!.usage).toEqual({ inputTokens: 13 + 11 + 2 * 13, outputTokens: 9 + 7 + 2 * 9 });
  });

  it("is a share of the parent's remaining tool calls: the child ends tool_call_limit", async () => {
    const { result, workflowId } = await runTree({
      // 3 tool calls: the delegate call itself and 2 for the child.
      input: { prompt: 'Order 4?', agent: 'lead', limits: { maxToolCalls: 3 } },
      replies: (root) => [
        [root, [toolCall('researcher', { request: 'Order 4.' }), text('Unknown.')]],
        [
          childWorkflowId(root, 'call-0-0'),
          [
            toolCall('lookup_order', { orderId: 't4' }),
            toolCall('lookup_order', { orderId: 't4' }),
            toolCall('lookup_order', { orderId: 't4' }),
          ],
        ],
      ],
    });
    const child = (await environment.env.client.workflow.getHandle(childWorkflowId(workflowId, 'call-0-0')).result()) as AgentTurnResult;
    expect(child.status).toBe('tool_call_limit');
    expect(ran('lookup_order', 't4')).toBe(2);
    expect(result!.toolCalls[0]).toMatchObject({ code: 'tool_failure', delegate: { status: 'tool_call_limit' } });
  });
});

describe("a subagent's token allowance", () => {
  it("is the parent's tokens left: the child ends token_budget_exhausted within it, and what it used ends the parent's budget too", async () => {
    const lookups = Array.from({ length: 5 }, () => toolCall('lookup_order', { orderId: 'm1' }));
    const { result, workflowId } = await runTree({
      input: { prompt: 'Order 1?', agent: 'lead', limits: { maxTokens: 100 } },
      replies: (root) => [
        [root, [toolCall('researcher', { request: 'Order 1.' }), text('Never asked.')]],
        [childWorkflowId(root, 'call-0-0'), lookups],
      ],
    });
    const child = (await environment.env.client.workflow.getHandle(childWorkflowId(workflowId, 'call-0-0')).result()) as AgentTurnResult;
    // The parent's first step used 13 + 9 of 100: the child may use 78; each of its steps uses 13 + 9.
    expect(child).toMatchObject({ status: 'token_budget_exhausted', tokenBudget: 78, usage: { inputTokens: 39, outputTokens: 27 } });
    expect(ran('lookup_order', 'm1')).toBe(3);
    // 22 + 66 used and the last prompt's 13 would pass 100: the parent asks its model nothing more.
    expect(result).toMatchObject({ status: 'token_budget_exhausted', usage: { inputTokens: 13 + 39, outputTokens: 9 + 27 } });
    expect(provider().requests.filter((request) => request.queue === workflowId)).toHaveLength(1);
  });
});

describe('delegation that must not go on', () => {
  it('refuses a cycle A → B → A with delegation_refused, naming the path; nothing is started', async () => {
    const { result, workflowId } = await runTree({
      input: { prompt: 'Go.', agent: 'alpha' },
      replies: (root) => [
        [root, [toolCall('beta', { request: 'Ask alpha.' }), text('Alpha done.')]],
        [childWorkflowId(root, 'call-0-0'), [toolCall('alpha', { request: 'Back to you.' }), text('Beta done.')]],
      ],
    });
    const childId = childWorkflowId(workflowId, 'call-0-0');
    const child = (await environment.env.client.workflow.getHandle(childId).result()) as AgentTurnResult;
    expect(child.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'alpha',
        code: 'delegation_refused',
        executions: 0,
        delegate: { agent: 'alpha', workflowId: childWorkflowId(childId, 'call-0-0'), status: 'refused' },
      }),
    ]);
    const sent = provider().requests.filter((request) => request.queue === childId)[1].body as { messages: Array<{ content: unknown }> };
    expect(JSON.stringify(sent.messages.at(-1)!.content)).toContain('alpha → beta → alpha');
    await expect(environment.env.client.workflow.getHandle(childWorkflowId(childId, 'call-0-0')).describe()).rejects.toThrow();
    expect(result).toMatchObject({ status: 'completed', answer: 'Alpha done.' });
  });

  it('refuses delegation past limits.maxDepth with delegation_refused; the turn goes on', async () => {
    const { result, workflowId } = await runTree({
      input: { prompt: 'Go.', agent: 'top', limits: { maxDepth: 1 } },
      replies: (root) => [
        [root, [toolCall('middle', { request: 'Go deeper.' }), text('Top done.')]],
        [childWorkflowId(root, 'call-0-0'), [toolCall('bottom', { request: 'Deeper still.' }), text('Middle done.')]],
      ],
    });
    const childId = childWorkflowId(workflowId, 'call-0-0');
    const child = (await environment.env.client.workflow.getHandle(childId).result()) as AgentTurnResult;
    expect(child.toolCalls).toEqual([expect.objectContaining({ tool: 'bottom', code: 'delegation_refused', executions: 0 })]);
    const sent = provider().requests.filter((request) => request.queue === childId)[1].body as { messages: Array<{ content: unknown }> };
    expect(JSON.stringify(sent.messages.at(-1)!.content)).toMatch(/top → middle → bottom would be 2 levels deep, past limits.maxDepth 1/);
    expect(result).toMatchObject({ status: 'completed', answer: 'Top done.' });
    expect(result!.toolCalls[0]).toMatchObject({ tool: 'middle', status: 'success', delegate: { status: 'completed' } });
  });
});
