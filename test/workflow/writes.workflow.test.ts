import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { argsDigest } from '../../tools/canonical-json';
import { defineTool, type StatusAnswer, type ToolDefinition } from '../../tools/define-tool';
import { openSqliteStore } from '../../intents/sqlite-store';
import { saveDraftTool } from '../../tools/built-in/save-draft';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { taskFolderName } from '../../tools/built-in/workspace-path';
import type { TurnState } from '../../common/contract/turn';
import { approvalSignal, decideUpdate } from '../../workflows/messages';
import { keepHistory, REVERSIBLE_RETRY_HISTORY } from '../helpers/histories';
import { testConfig } from '../helpers/test-config';
import { createWorker } from '../../worker/create-worker';
import { createActivities } from '../../activities';
import type { ModelStepInput } from '../../common/activity-types';
import type { AgentTurnResult } from '../../common/contract/turn';
import { scripted, waitForState, useTimeSkippingEnvironment, useTurnRunner, type TurnOptions } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

function connectionReset(): Error {
  return Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });
}

/**
 * A fake remote service with a real effect: a ledger of applied intents. The tool's handler and
 * status check go through it, and it counts handler executions, applied effects and lookups.
 */
function ledgerTool({
  effect,
  behave,
  timeout = 5_000,
  maxAttempts = 3,
  approvalTimeout,
}: {
  effect: 'reversible_write' | 'irreversible_write';
  behave: (execution: number, apply: () => void) => Promise<unknown> | unknown;
  timeout?: number;
  maxAttempts?: number;
  approvalTimeout?: string;
}) {
  const ledger = new Map<string, number>();
  const counts = { executions: 0, effects: 0, lookups: 0 };
  const tool: ToolDefinition = defineTool({
    name: 'book_room',
    description: 'Books a room.',
    input: z.strictObject({ room: z.string().describe('The room to book.') }),
    effect,
    timeout,
    maxAttempts,
    approvalTimeout,
    status: (_args, { idempotencyKey }): StatusAnswer => {
      counts.lookups++;
      return ledger.has(idempotencyKey) ? { state: 'applied', data: { booked: true, from: 'status' } } : 'not_applied';
    },
    handler: async (_args, { idempotencyKey }) =>
      behave(++counts.executions, () => {
        counts.effects++;
        ledger.set(idempotencyKey!, (ledger.get(idempotencyKey!) ?? 0) + 1);
      }),
  });
  return { tool, counts, ledger };
}

const bookStep = { toolCalls: [{ tool: 'book_room', args: { room: 'blue' } }] };

/** Waits for the first pending approval and returns it with the state. */
async function firstPending(handle: WorkflowHandle): Promise<{ state: TurnState; callId: string; digest: string }> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
  return { state, callId: state.pendingApprovals[0].callId, digest: state.pendingApprovals[0].argsDigest };
}

describe('the failure matrix for writes', () => {
  it('refuses a write with a missing argument: invalid_arguments, 0 executions, nothing scheduled', async () => {
    const reversible = ledgerTool({ effect: 'reversible_write', behave: (_n, apply) => apply() });
    const { result, runToolScheduled } = await runTurn({
      tools: [reversible.tool],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'book_room', args: {} }] }, { text: 'done' }]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ code: 'invalid_arguments', executions: 0 })]);
    expect(reversible.counts).toEqual({ executions: 0, effects: 0, lookups: 0 });
    expect(runToolScheduled).toBe(0);
  });

  it('looks up a reversible write first; after a disconnect it looks up again and writes exactly once', async () => {
    const reversible = ledgerTool({
      effect: 'reversible_write',
      behave: (execution, apply) => {
        if (execution === 1) throw connectionReset();
        apply();
        return 'booked';
      },
    });
    const { result, history } = await runTurn({
      tools: [reversible.tool],
      input: { prompt: 'x', model: scripted([bookStep, { text: 'done' }]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'book_room', status: 'success', executions: 2 })]);
    expect(reversible.counts).toEqual({ executions: 2, effects: 1, lookups: 2 });
    keepHistory(REVERSIBLE_RETRY_HISTORY, history);
  });

  it('answers a reversible write that took effect and then timed out from the status lookup: success, 1 execution', async () => {
    const reversible = ledgerTool({
      effect: 'reversible_write',
      timeout: 200,
      behave: (_execution, apply) => {
        apply();
        return new Promise(() => {});
      },
    });
    const { result, modelInputs } = await runTurn({
      tools: [reversible.tool],
      input: { prompt: 'x', model: scripted([bookStep, { text: 'done' }]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(reversible.counts).toEqual({ executions: 1, effects: 1, lookups: 2 });
    const seen = modelInputs[1].messages.find((message) => message.role === 'tool');
    expect(seen).toMatchObject({ result: { status: 'success', data: { booked: true, from: 'status' } } });
  });

  it('backs off before it looks up again, so a write still applying after its timeout is found applied, not run twice', async () => {
    const reversible = ledgerTool({
      effect: 'reversible_write',
      timeout: 200,
      behave: async (execution, apply) => {
        // The first execution ignores its abort signal and applies 800 ms after its timeout, well inside the 2 s backoff.
        if (execution === 1) await new Promise((resolve) => setTimeout(resolve, 1_000));
        apply();
        return 'booked';
      },
    });
    const config = testConfig({ retry: { initialInterval: '2s', maximumInterval: '2s' } });
    const { result } = await runTurn({
      config,
      tools: [reversible.tool],
      input: { prompt: 'x', model: scripted([bookStep, { text: 'done' }]) },
      // Waits in real time, so the backoff passes on the clock the handler runs by.
      interact: async (handle) => void (await waitForState(handle, (state) => state.status !== 'running')),
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(reversible.counts).toEqual({ executions: 1, effects: 1, lookups: 2 });
  });

  it('answers an approved irreversible write that took effect and then timed out from its status check: 1 execution, never 2', async () => {
    const irreversible = ledgerTool({
      effect: 'irreversible_write',
      timeout: 200,
      behave: (_execution, apply) => {
        apply();
        return new Promise(() => {});
      },
    });
    const { result } = await runTurn({
      tools: [irreversible.tool],
      input: { prompt: 'x', model: scripted([bookStep, bookStep, { text: 'done' }]) },
      interact: async (handle) => {
        const first = await firstPending(handle);
        await handle.signal(approvalSignal, { callId: first.callId, decision: 'approve', argsDigest: first.digest });
        // The model asks again for the same intent: its receipt answers it as a repeat, and nobody is asked again.
      },
    });
    // The check after the cut-off finds the effect and records its receipt, which answers the second call too.
    expect(result.toolCalls.map((event) => [event.status, event.code, event.executions, event.repeatOf])).toEqual([
      ['success', undefined, 1, undefined],
      ['success', undefined, 0, 'call-0-0'],
    ]);
    expect(irreversible.counts.executions).toBe(1);
    expect(irreversible.counts.effects).toBe(1);
  });

  it('ends an approved irreversible call that no worker could start in time as not_run: 0 executions, never outcome_unknown', async () => {
    // One worker with a single activity slot. A read of another turn holds that slot until the test lets it go,
    // so the approved call waits in the task queue; after approvals.scheduleToStart (1 s) the server times it out.
    const { env, workflowBundle } = environment;
    const irreversible = ledgerTool({ effect: 'irreversible_write', behave: (_n, apply) => apply() });
    let holding = false;
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    const slowRead = defineTool({
      name: 'slow_read',
      description: 'Reads slowly.',
      input: z.strictObject({}),
      effect: 'read',
      timeout: 60_000,
      handler: async () => {
        holding = true;
        await held;
        return 'read';
      },
    });
    const base = testConfig({ approvals: { scheduleToStart: '1s' } });
    const taskQueue = `test-${randomUUID()}`;
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const store = openSqliteStore(config.store.sqliteFile);
    const activities = createActivities({ config, tools: [irreversible.tool, slowRead], store });
    const modelInputs: ModelStepInput[] = [];
    const worker = await createWorker({
      config,
      connection: env.nativeConnection,
      activities: {
        ...activities,
        modelStep: (input: ModelStepInput) => (modelInputs.push(structuredClone(input)), activities.modelStep(input)),
      },
      store,
      workflowBundle,
      workerOptions: { maxConcurrentActivityTaskExecutions: 1 },
    });
    const start = (taskId: string, steps: Parameters<typeof scripted>[0]) =>
      env.client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue,
        args: [{ taskId, prompt: 'x', model: scripted(steps) }],
      });
    const { result, state } = await worker.runUntil(async () => {
      try {
        const booking = await start('task-1', [bookStep, { text: 'done' }]);
        const { callId, digest } = await firstPending(booking);
        const reading = await start('task-2', [{ toolCalls: [{ tool: 'slow_read', args: {} }] }, { text: 'done' }]);
        await expect.poll(() => holding, { timeout: 20_000 }).toBe(true);
        await booking.signal(approvalSignal, { callId, decision: 'approve', argsDigest: digest });
        const ended = await waitForState(booking, (current) => current.toolCalls.length > 0);
        letGo();
        await reading.result();
        return { result: (await booking.result()) as AgentTurnResult, state: ended };
      } finally {
        // A failed expectation must not leave the read holding the worker's only slot: the worker's shutdown waits for it.
        letGo();
      }
    });
    await store.close();
    expect(state.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'not_run', executions: 0 })]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'not_run', executions: 0 })]);
    expect(irreversible.counts).toEqual({ executions: 0, effects: 0, lookups: 0 });
    const told = modelInputs
      .find((input) => input.taskId === 'task-1' && input.step === 1)
      ?.messages.find((message) => message.role === 'tool');
    expect(told).toMatchObject({
      result: {
        status: 'error',
        code: 'not_run',
        retryable: false,
        message: 'book_room was approved, but no worker started it within 1 s; it did not run',
      },
    });
  });

  it('refuses a forbidden write before it is scheduled: forbidden, 0 executions', async () => {
    const reversible = ledgerTool({ effect: 'reversible_write', behave: (_n, apply) => apply() });
    const config = testConfig();
    const drafts = saveDraftTool({ workspace: config.workspace });
    const { result, runToolScheduled } = await runTurn({
      config,
      tools: [reversible.tool, drafts],
      input: {
        prompt: 'x',
        tools: ['save_draft'],
        limits: { errorBudget: 5 },
        model: scripted([
          {
            toolCalls: [
              { tool: 'book_room', args: { room: 'blue' } },
              { tool: 'save_draft', args: { path: '../../escape.md', content: 'x' } },
              { tool: 'save_draft', args: { path: '/etc/passwd', content: 'x' } },
            ],
          },
          { text: 'done' },
        ]),
      },
    });
    expect(result.toolCalls.map((event) => [event.tool, event.code, event.executions])).toEqual([
      ['book_room', 'forbidden', 0],
      ['save_draft', 'forbidden', 0],
      ['save_draft', 'forbidden', 0],
    ]);
    expect(reversible.counts.executions).toBe(0);
    expect(runToolScheduled).toBe(0);
    expect(existsSync(path.join(config.workspace, '..', 'escape.md'))).toBe(false);
  });

  it('refuses a call the model step decided under a weaker effect than the running worker declares: forbidden, 0 executions', async () => {
    const irreversible = ledgerTool({ effect: 'irreversible_write', behave: (_n, apply) => apply() });
    const olderVersion = ledgerTool({ effect: 'reversible_write', behave: (_n, apply) => apply() });
    const { result, modelInputs } = await runTurn({
      tools: [irreversible.tool],
      modelStepTools: [olderVersion.tool],
      input: { prompt: 'x', model: scripted([bookStep, { text: 'done' }]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'forbidden', executions: 0 })]);
    const seen = modelInputs[1].messages.find((message) => message.role === 'tool');
    expect(seen).toMatchObject({
      result: {
        message: "book_room is not run: the model step's worker declared it reversible_write, this worker declares irreversible_write",
      },
    });
    expect(irreversible.counts.executions + olderVersion.counts.executions).toBe(0);
    expect(irreversible.counts.effects + olderVersion.counts.effects).toBe(0);
  });

  it('writes the same save_draft intent once, however often it is asked for in a task', async () => {
    const config = testConfig();
    const store = openSqliteStore(config.store.sqliteFile);
    const drafts = saveDraftTool({ workspace: config.workspace });
    let writes = 0;
    const counted: ToolDefinition = { ...drafts, handler: (args, context) => (writes++, drafts.handler(args, context)) };
    const save = { toolCalls: [{ tool: 'save_draft', args: { path: 'notes/plan.md', content: '# Plan\n' } }] };
    const first = await runTurn({
      config,
      store,
      tools: [counted],
      input: { prompt: 'x', model: scripted([save, save, { text: 'done' }]) },
    });
    expect(first.result.toolCalls.map((event) => [event.status, event.executions])).toEqual([
      ['success', 1],
      ['success', 0],
    ]);
    // Another turn of the same task with the same intent: still no second write.
    const second = await runTurn({ config, store, tools: [counted], input: { prompt: 'x', model: scripted([save, { text: 'done' }]) } });
    const taskFolder = taskFolderName('task-1');
    expect(second.result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 0 })]);
    expect(writes).toBe(1);
    expect(readdirSync(path.join(config.workspace, 'drafts'), { recursive: true }).map(String).sort()).toEqual([
      taskFolder,
      `${taskFolder}/notes`,
      `${taskFolder}/notes/plan.md`,
    ]);
    await store.close();
  });
});

describe('approvals of irreversible writes', () => {
  function outboxTurn(interact: TurnOptions['interact'], extra: Partial<TurnOptions['input']> = {}) {
    const config = testConfig();
    const send = sendMessageTool({ workspace: config.workspace });
    const outbox = path.join(config.workspace, 'outbox');
    const step = { toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } }] };
    const delivered = () =>
      existsSync(outbox) ? readdirSync(outbox, { recursive: true }).filter((name) => String(name).endsWith('.json')).length : 0;
    return runTurn({ config, tools: [send], interact, input: { prompt: 'x', model: scripted([step, { text: 'done' }]), ...extra } }).then(
      (run) => ({ ...run, delivered: delivered() }),
    );
  }

  it('runs an approved call exactly once and shows the wait in state and search attributes', async () => {
    let awaiting: unknown;
    const { result, delivered } = await outboxTurn(async (handle) => {
      const { state, callId, digest } = await firstPending(handle);
      expect(state.pendingApprovals[0]).toMatchObject({
        tool: 'send_message',
        args: { to: 'ops' },
        argsDigest: argsDigest({ to: 'ops', subject: 'Hello', body: 'The brief.' }),
      });
      awaiting = (await handle.describe()).searchAttributes.TollgateAwaitingApproval;
      await handle.signal(approvalSignal, { callId, decision: 'approve', argsDigest: digest });
    });
    expect(awaiting).toEqual([true]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success', executions: 1 })]);
    expect(delivered).toBe(1);
  });

  it('does not run a denied call: denied, 0 executions, and no error budget spent', async () => {
    const { result, delivered } = await outboxTurn(
      async (handle) => {
        const { callId, digest } = await firstPending(handle);
        await handle.signal(approvalSignal, { callId, decision: 'deny', approver: 'lead', reason: 'not now', argsDigest: digest });
      },
      { limits: { errorBudget: 0 } },
    );
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'denied', code: 'denied', executions: 0 })]);
    expect(delivered).toBe(0);
  });

  it('expires a call nobody decides on within 24 hours of server time: approval_expired, 0 executions', async () => {
    const started = Date.now();
    const { result, delivered } = await outboxTurn(undefined);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'approval_expired', executions: 0 })]);
    expect(delivered).toBe(0);
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it("rejects and records a decision that names no digest, unless the worker's config says digests are optional", async () => {
    const { result, delivered, state } = await outboxTurn(async (handle) => {
      const { callId, digest } = await firstPending(handle);
      await handle.signal(approvalSignal, { callId, decision: 'approve', approver: 'blind' });
      const blind = await handle.executeUpdate(decideUpdate, { args: [{ callId, decision: 'approve' }] }).catch((error) => error);
      expect(blind).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(blind.cause.message).toBe(
        `argsDigest is required: send the digest of the arguments of call ${callId} you decide on (pendingApprovals in the state query)`,
      );
      await waitForState(handle, (current) => current.rejectedDecisions.length === 1);
      await handle.signal(approvalSignal, { callId, decision: 'approve', approver: 'sighted', argsDigest: digest });
    });
    expect(state.rejectedDecisions).toEqual([expect.objectContaining({ why: expect.stringMatching(/^argsDigest is required/) })]);
    expect(state.decisions).toEqual([expect.objectContaining({ approver: 'sighted' })]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(delivered).toBe(1);

    const config = testConfig({ approvals: { requireDigest: false } });
    const send = sendMessageTool({ workspace: config.workspace });
    const step = { toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } }] };
    const optional = await runTurn({
      config,
      tools: [send],
      input: { prompt: 'x', model: scripted([step, { text: 'done' }]) },
      interact: async (handle) => {
        await handle.signal(approvalSignal, { callId: (await firstPending(handle)).callId, decision: 'approve', approver: 'developer' });
      },
    });
    expect(optional.state.rejectedDecisions).toEqual([]);
    expect(optional.result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
  });

  it('rejects and records decisions for another call, with a wrong digest, or replayed', async () => {
    const { result, delivered, state } = await outboxTurn(async (handle) => {
      const { callId } = await firstPending(handle);
      await handle.signal(approvalSignal, { callId: 'call-9-9', decision: 'approve' });
      await handle.signal(approvalSignal, {
        callId,
        decision: 'approve',
        argsDigest: argsDigest({ to: 'attacker', subject: 'Hello', body: 'The brief.' }),
      });
      await handle.signal(approvalSignal, { callId, decision: 'maybe' } as never);
      await waitForState(handle, (current) => current.rejectedDecisions.length === 3);
    });
    expect(state.rejectedDecisions.map((rejected) => rejected.why)).toEqual([
      'no call call-9-9 waits for approval',
      'argsDigest does not match the arguments of call call-0-0',
      'decision must be "approve" or "deny", got "maybe"',
    ]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ code: 'approval_expired', executions: 0 })]);
    expect(delivered).toBe(0);
  });

  it('answers the decide update synchronously: a forged decision is rejected, a valid one accepted, a replay rejected', async () => {
    // Two messages in one step: the second waits for its own decision, so the turn is still running
    // when the first call's decision is replayed (a finished turn would refuse any update at all).
    const second = { to: 'ops', subject: 'Follow-up', body: 'Second.' };
    const twoSends = scripted([
      {
        toolCalls: [
          { tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } },
          { tool: 'send_message', args: second },
        ],
      },
      { text: 'done' },
    ]);
    const { result, delivered, state } = await outboxTurn(
      async (handle) => {
        const { callId, digest } = await firstPending(handle);
        const forged = await handle
          .executeUpdate(decideUpdate, { args: [{ callId, decision: 'approve', argsDigest: 'f'.repeat(64) }] })
          .catch((error) => error);
        expect(forged).toBeInstanceOf(WorkflowUpdateFailedError);
        expect(forged.cause.message).toBe(`argsDigest does not match the arguments of call ${callId}`);
        await expect(handle.executeUpdate(decideUpdate, { args: [{ callId, decision: 'approve', argsDigest: digest }] })).resolves.toEqual({
          callId,
          decision: 'approve',
          accepted: true,
        });
        const next = await waitForState(handle, (current) => current.pendingApprovals.some((pending) => pending.callId !== callId));
        const replayed = await handle
          .executeUpdate(decideUpdate, { args: [{ callId, decision: 'approve', argsDigest: digest }] })
          .catch((error) => error);
        expect(replayed).toBeInstanceOf(WorkflowUpdateFailedError);
        expect(replayed.cause.message).toMatch(/already decided|no call .* waits for approval/);
        await handle.signal(approvalSignal, { callId, decision: 'approve', argsDigest: digest });
        await waitForState(handle, (current) => current.rejectedDecisions.length === 1);
        const waiting = next.pendingApprovals.find((pending) => pending.callId !== callId)!;
        await handle.signal(approvalSignal, {
          callId: waiting.callId,
          decision: 'deny',
          argsDigest: waiting.argsDigest,
          reason: 'one message is enough',
        });
      },
      { model: twoSends },
    );
    expect(state.rejectedDecisions).toEqual([
      expect.objectContaining({ why: expect.stringMatching(/already decided|no call .* waits for approval/) }),
    ]);
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ status: 'success', executions: 1 }),
      expect.objectContaining({ status: 'denied', executions: 0 }),
    ]);
    expect(delivered).toBe(1);
  });
});
