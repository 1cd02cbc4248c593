import { openSqliteStore } from '../../intents/sqlite-store';
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import type { AgentTurnResult, ScriptStep, Usage } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { createWorker } from '../../worker/create-worker';
import { closeConversationSignal, historyQuery, raiseTokenBudgetUpdate, sendUpdate } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

const total = (usage: Usage) => usage.inputTokens + usage.outputTokens;
const sum = (usages: Usage[]) => usages.reduce((tokens, usage) => tokens + total(usage), 0);

/** Four steps that each read a document, then an answer: five model steps when nothing stops the turn. */
const READING: ScriptStep[] = [
  ...['pricing-plans', 'refund-policy', 'expense-policy', 'remote-work'].map((id) => ({
    toolCalls: [{ tool: 'get_document', args: { id } }],
  })),
  { text: 'Read all four.' },
];

describe('a turn token budget (limits.maxTokens)', () => {
  it('ends the turn with token_budget_exhausted before the step that would pass it, with its events, at the exact step', async () => {
    const free = await runTurn({ input: { prompt: 'read them', model: scripted(READING) } });
    expect(free.result).toMatchObject({ status: 'completed', steps: 5 });
    expect(free.result.tokenBudget).toBeUndefined();
    const steps = free.modelOutputs.map((output) => output.usage);
    expect(steps).toHaveLength(5);
    // Each step's prompt holds the one before it, so its input tokens are never fewer.
    steps.slice(1).forEach((usage, index) => expect(usage.inputTokens).toBeGreaterThanOrEqual(steps[index].inputTokens));

    // Before step 3 (index 2) the turn has used the first two steps and expects at least the second's input again.
    const edge = sum(steps.slice(0, 2)) + steps[1].inputTokens;
    const atEdge = await runTurn({ input: { prompt: 'read them', model: scripted(READING), limits: { maxTokens: edge } } });
    expect(atEdge.result.status).toBe('token_budget_exhausted');
    expect(atEdge.modelInputs).toHaveLength(3);
    expect(atEdge.result.toolCalls.map((event) => [event.step, event.tool, event.status])).toEqual([
      [0, 'get_document', 'success'],
      [1, 'get_document', 'success'],
      [2, 'get_document', 'success'],
    ]);
    expect(atEdge.result.usage).toEqual({
      inputTokens: steps.slice(0, 3).reduce((tokens, usage) => tokens + usage.inputTokens, 0),
      outputTokens: steps.slice(0, 3).reduce((tokens, usage) => tokens + usage.outputTokens, 0),
    });
    expect(atEdge.result.tokenBudget).toBe(edge);
    expect(atEdge.state).toMatchObject({ status: 'token_budget_exhausted', usage: atEdge.result.usage, tokenBudget: edge });
    // The budgeted turn's history replays on the same code; no turn, with a budget or without, records a patch marker.
    const patches = (run: typeof free) =>
      (run.history.events ?? []).filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_patch');
    expect([patches(atEdge).length, patches(free).length]).toEqual([0, 0]);
    await Worker.runReplayHistory({ workflowBundle: environment.workflowBundle }, atEdge.history, 'budgeted-turn');

    // One token less and step 3 would already pass it: two steps run.
    const below = await runTurn({ input: { prompt: 'read them', model: scripted(READING), limits: { maxTokens: edge - 1 } } });
    expect(below.result.status).toBe('token_budget_exhausted');
    expect(below.modelInputs).toHaveLength(2);
    expect(below.result.toolCalls).toHaveLength(2);
    expect(total(below.result.usage)).toBe(sum(steps.slice(0, 2)));
  });

  it('takes the budget from config limits.maxTokens, and the live state shows the usage against it while the turn waits', async () => {
    const config = testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' }, limits: { maxTokens: 1_000_000 } });
    const script: ScriptStep[] = [
      { toolCalls: [{ tool: 'send_message', args: { to: 'ops@example.com', subject: 'hi', body: 'hello' } }] },
      { text: 'sent' },
    ];
    const { result } = await runTurn({
      config,
      input: { prompt: 'send it', model: scripted(script) },
      interact: async (handle) => {
        const waiting = await waitForState(handle, (state) => state.pendingApprovals.length > 0);
        expect(waiting.tokenBudget).toBe(1_000_000);
        expect(total(waiting.usage!)).toBeGreaterThan(0);
        const { callId, argsDigest } = waiting.pendingApprovals[0];
        await handle.signal('approval', { callId, decision: 'deny', approver: 'tester', argsDigest, reason: 'not now' });
      },
    });
    expect(result).toMatchObject({ status: 'completed', tokenBudget: 1_000_000 });
  });

  it('refuses a budget that is not a whole number, naming the limit', async () => {
    const run = runTurn({ input: { prompt: 'hi', model: scripted([{ text: 'hi' }]), limits: { maxTokens: 1.5 } } });
    await expect(run).rejects.toMatchObject({ cause: { message: 'agentTurn input: limits.maxTokens must be a whole number' } });
  });
});

/** A worker for conversations on its own task queue, running `body` with the client. */
async function withConversationWorker(config: TollgateConfig, body: (taskQueue: string) => Promise<void>) {
  const { env, workflowBundle } = environment;
  const taskQueue = `test-${randomUUID()}`;
  const queued = { ...config, temporal: { ...config.temporal, taskQueue } };
  const activities = createActivities({ config: queued, store: openSqliteStore(':memory:') });
  const worker = await createWorker({ config: queued, connection: env.nativeConnection, activities, workflowBundle });
  await worker.runUntil(() => body(taskQueue));
}

describe('a conversation token ledger', () => {
  it('counts the usage of its turns across continue-as-new and gives each turn the tokens left as its budget', async () => {
    const { env } = environment;
    const conversationId = `conversation-${randomUUID()}`;
    const budget = 100_000;
    await withConversationWorker(testConfig(), async (taskQueue) => {
      const handle = await env.client.workflow.start('conversation', {
        workflowId: conversationId,
        taskQueue,
        args: [{ conversationId, maxTurnsPerRun: 1, maxTokens: budget, model: scripted([{ text: 'noted and kept' }]) }],
      });
      const firstRun = (await handle.describe()).runId;
      const first = (await handle.executeUpdate(sendUpdate, { args: [{ text: 'My name is Ada.' }] })) as AgentTurnResult;
      expect(first).toMatchObject({ status: 'completed', tokenBudget: budget });
      const latest = env.client.workflow.getHandle(conversationId);
      const second = (await latest.executeUpdate(sendUpdate, { args: [{ text: 'I work on billing.' }] })) as AgentTurnResult;
      // The second turn ran in a new run, with what the first left of the budget.
      expect((await latest.describe()).runId).not.toBe(firstRun);
      expect(second).toMatchObject({ status: 'completed', tokenBudget: budget - total(first.usage) });
      const state = await latest.query(historyQuery);
      expect(state.tokens).toEqual({
        budget,
        used: {
          inputTokens: first.usage.inputTokens + second.usage.inputTokens,
          outputTokens: first.usage.outputTokens + second.usage.outputTokens,
        },
      });
      await latest.signal(closeConversationSignal);
      expect(await latest.result()).toMatchObject({ closed: true, turns: 2, tokens: state.tokens });
      // Both runs, the carried ledger included, replay on the same code.
      await Worker.runReplayHistory({ workflowBundle: environment.workflowBundle }, await handle.fetchHistory(), 'ledger-first-run');
      await Worker.runReplayHistory({ workflowBundle: environment.workflowBundle }, await latest.fetchHistory(), 'ledger-second-run');
    });
  });

  it('takes config limits.maxConversationTokens, refuses sends once it is spent, and takes more after raiseTokenBudget', async () => {
    const { env } = environment;
    const conversationId = `conversation-${randomUUID()}`;
    const config = testConfig({ limits: { maxConversationTokens: 5 } });
    await withConversationWorker(config, async (taskQueue) => {
      const handle = await env.client.workflow.start('conversation', {
        workflowId: conversationId,
        taskQueue,
        args: [{ conversationId, model: scripted([{ text: 'a reply of several words' }]) }],
      });
      // The first step starts on an empty ledger and spends more than the 5 tokens.
      const first = (await handle.executeUpdate(sendUpdate, { args: [{ text: 'Hello there.' }] })) as AgentTurnResult;
      expect(first).toMatchObject({ status: 'completed', tokenBudget: 5 });
      const used = total(first.usage);
      expect(used).toBeGreaterThan(5);

      const refused = handle.executeUpdate(sendUpdate, { args: [{ text: 'Still there?' }] });
      await expect(refused).rejects.toMatchObject({
        cause: {
          message: `send: the conversation's token budget is spent (${used} of 5 tokens used); raise it with the raiseTokenBudget update`,
        },
      });
      await expect(handle.executeUpdate(raiseTokenBudgetUpdate, { args: [{ maxTokens: 5 }] })).rejects.toMatchObject({
        cause: { message: 'raiseTokenBudget: maxTokens 5 is not above the budget in force (5)' },
      });
      const raised = await handle.executeUpdate(raiseTokenBudgetUpdate, { args: [{ maxTokens: used + 10_000 }] });
      expect(raised).toEqual({ budget: used + 10_000, used: first.usage });

      const second = (await handle.executeUpdate(sendUpdate, { args: [{ text: 'Still there?' }] })) as AgentTurnResult;
      expect(second).toMatchObject({ status: 'completed', tokenBudget: 10_000 });
      const state = await handle.query(historyQuery);
      expect(state.turns).toBe(2);
      expect(total(state.tokens!.used)).toBe(used + total(second.usage));
      await handle.signal(closeConversationSignal);
      await handle.result();
    });
  });
});
