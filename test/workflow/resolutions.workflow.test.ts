import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqliteStore } from '../../intents/sqlite-store';
import { WAITING_FOR_SEARCH_ATTRIBUTE } from '../../common/search-attributes';
import type { TurnState } from '../../common/contract/turn';
import { defineTool, type StatusAnswer, type ToolDefinition, type ToolSpec } from '../../tools/define-tool';
import { approvalSignal, resolveSignal, resolveUpdate } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTurnRunner, waitForState } from '../helpers/turn-runner';

const runTurn = useTurnRunner();

function connectionReset(): Error {
  return Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });
}

/** What a status check answers on its n-th call (1-based): the ledger's truth, or that it cannot tell. */
type StatusPlan = (lookup: number) => 'truth' | 'unknown';

/**
 * A fake payment service with a real effect: a ledger of applied intents. The handler's behaviour
 * per execution and the status check's plan per lookup are the test's; executions, effects and
 * lookups are counted. `status: false` declares no status check (irreversible writes only).
 */
function paymentTool({
  effect,
  behave,
  status = () => 'truth',
  timeout = 5_000,
}: {
  effect: 'reversible_write' | 'irreversible_write';
  behave: (execution: number, apply: () => void) => unknown;
  status?: StatusPlan | false;
  timeout?: number;
}) {
  const ledger = new Set<string>();
  const counts = { executions: 0, effects: 0, lookups: 0 };
  const check = (_args: unknown, { idempotencyKey }: { idempotencyKey: string }): StatusAnswer => {
    if (status === false) throw new Error('no status check');
    if (status(++counts.lookups) === 'unknown') throw new Error('the ledger did not answer');
    return ledger.has(idempotencyKey) ? { state: 'applied', data: { paid: true, from: 'ledger' } } : 'not_applied';
  };
  const input = z.strictObject({ invoice: z.string().describe('The invoice to pay.') });
  // The effect is a parameter, so the spec is built from parts: defineTool checks at run time what the union checks at compile time.
  const tool: ToolDefinition = defineTool({
    name: 'pay_invoice',
    description: 'Pays an invoice.',
    input,
    effect,
    timeout,
    maxAttempts: 3,
    ...(status === false ? {} : { status: check }),
    handler: async (_args, { idempotencyKey }) =>
      behave(++counts.executions, () => {
        counts.effects++;
        ledger.add(idempotencyKey!);
      }),
  } as ToolSpec<typeof input>);
  return { tool, counts, ledger };
}

const payStep = { toolCalls: [{ tool: 'pay_invoice', args: { invoice: 'INV-7' } }] };

/** Applies, then the connection drops: it took effect, and nobody was told. */
const appliedThenCut = (_execution: number, apply: () => void) => {
  apply();
  throw connectionReset();
};

/** The first execution is cut off before it applies; later ones apply. */
const cutThenApplies = (execution: number, apply: () => void) => {
  if (execution === 1) throw connectionReset();
  apply();
  return 'paid';
};

function configWith(outcomes: Record<string, unknown> = {}) {
  return testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' }, outcomes: { resolveTimeout: '30m', ...outcomes } });
}

async function pendingResolution(handle: WorkflowHandle) {
  const state = await waitForState(handle, (current) => (current.pendingResolutions?.length ?? 0) > 0);
  return { state, pending: state.pendingResolutions![0] };
}

async function approveFirst(handle: WorkflowHandle, seen = 0): Promise<TurnState> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0 && current.decisions.length === seen);
  const [pending] = state.pendingApprovals;
  // As a person sends it from what the turn shows: from the second wait of a call on, its round too.
  const round = pending.round > 1 ? { round: pending.round } : {};
  await handle.signal(approvalSignal, { callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest, ...round });
  return state;
}

function toolMessage(modelInputs: Array<{ messages: Array<{ role: string }> }>) {
  return modelInputs[modelInputs.length - 1].messages.find((message) => message.role === 'tool');
}

describe('unknown outcomes resolved by a person: reversible writes', () => {
  it('applied: the call succeeds from the person’s word, the intent is committed with it, and nothing runs again', async () => {
    // Lookup 1 finds nothing, the execution applies and is cut off, lookup 2 cannot tell: a person is asked.
    const payment = paymentTool({ effect: 'reversible_write', behave: appliedThenCut, status: (n) => (n === 2 ? 'unknown' : 'truth') });
    const store = openSqliteStore(':memory:');
    let waiting: unknown;
    const { result, modelInputs, state } = await runTurn({
      store,
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => {
        const { pending, state: seen } = await pendingResolution(handle);
        expect(seen.phase).toBe('awaiting_resolution');
        expect(pending).toMatchObject({ callId: 'call-0-0', tool: 'pay_invoice', args: { invoice: 'INV-7' } });
        expect(pending.reason).toContain('the ledger did not answer');
        expect(Date.parse(pending.expiresAt) - Date.parse(pending.since)).toBe(30 * 60_000);
        waiting = (await handle.describe()).typedSearchAttributes.get(WAITING_FOR_SEARCH_ATTRIBUTE);
        // A wrong digest is refused to the caller of the update, and recorded when it comes as a signal.
        const wrong = { callId: pending.callId, outcome: 'applied' as const, argsDigest: 'f'.repeat(64) };
        await expect(handle.executeUpdate(resolveUpdate, { args: [wrong] })).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
        await handle.signal(resolveSignal, wrong);
        const receipt = await handle.executeUpdate(resolveUpdate, {
          args: [
            {
              callId: pending.callId,
              outcome: 'applied',
              argsDigest: pending.argsDigest,
              resolver: 'maria',
              note: 'in the bank statement',
            },
          ],
        });
        expect(receipt).toEqual({ callId: 'call-0-0', outcome: 'applied', accepted: true });
      },
    });
    expect(waiting).toEqual(['resolution']);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(payment.counts).toEqual({ executions: 1, effects: 1, lookups: 2 });
    const data = { resolvedByPerson: true, resolver: 'maria', note: 'in the bank statement', message: 'maria said this call took effect' };
    expect(toolMessage(modelInputs)).toMatchObject({ result: { status: 'success', data } });
    const [record] = await store.listTask('task-1');
    expect(record).toMatchObject({ state: 'committed', receipt: { status: 'success', data } });
    expect(state.pendingResolutions).toEqual([]);
    expect(state.resolutions).toEqual([expect.objectContaining({ callId: 'call-0-0', outcome: 'applied', resolver: 'maria' })]);
    expect(state.rejectedDecisions).toEqual([expect.objectContaining({ why: 'argsDigest does not match the arguments of call call-0-0' })]);
    await store.close();
  });

  it('not_applied: the intent is released, a fresh lookup runs, and the write runs once more: 2 executions, 1 effect', async () => {
    const payment = paymentTool({ effect: 'reversible_write', behave: cutThenApplies, status: (n) => (n === 2 ? 'unknown' : 'truth') });
    const store = openSqliteStore(':memory:');
    let startedBefore: unknown;
    const { result, state } = await runTurn({
      store,
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => {
        const { pending } = await pendingResolution(handle);
        startedBefore = (await store.listTask('task-1')).map((record) => record.state);
        await handle.signal(resolveSignal, {
          callId: pending.callId,
          outcome: 'not_applied',
          argsDigest: pending.argsDigest,
          resolver: 'maria',
        });
      },
    });
    expect(startedBefore).toEqual(['started']);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 2 })]);
    expect(payment.counts).toEqual({ executions: 2, effects: 1, lookups: 3 });
    expect((await store.listTask('task-1')).map((record) => record.state)).toEqual(['committed']);
    expect(state.resolutions).toEqual([expect.objectContaining({ outcome: 'not_applied', resolver: 'maria' })]);
    await store.close();
  });

  it('nobody resolves it: after outcomes.resolveTimeout the model gets outcome_unknown, 1 execution', async () => {
    const payment = paymentTool({ effect: 'reversible_write', behave: appliedThenCut, status: (n) => (n === 2 ? 'unknown' : 'truth') });
    const { result, modelInputs, state } = await runTurn({
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => void (await pendingResolution(handle)),
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'outcome_unknown', executions: 1 })]);
    expect(payment.counts).toEqual({ executions: 1, effects: 1, lookups: 2 });
    expect(toolMessage(modelInputs)).toMatchObject({
      result: { code: 'outcome_unknown', message: expect.stringContaining('nobody resolved it within 1800 s') },
    });
    expect(state.pendingResolutions).toEqual([]);
  });

  it('report: the model gets outcome_unknown at once, nothing waits', async () => {
    const payment = paymentTool({ effect: 'reversible_write', behave: appliedThenCut, status: (n) => (n === 2 ? 'unknown' : 'truth') });
    const { result, modelInputs, state } = await runTurn({
      config: configWith({ onUnknown: 'report' }),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'outcome_unknown', executions: 1 })]);
    expect(state.resolutions).toEqual([]);
    expect(toolMessage(modelInputs)).toMatchObject({
      result: { code: 'outcome_unknown', message: 'pay_invoice: the status check failed: the ledger did not answer' },
    });
  });
});

describe('unknown outcomes resolved by a person: irreversible writes', () => {
  it('applied: success from the person’s word after one execution; it is never run again', async () => {
    const payment = paymentTool({ effect: 'irreversible_write', behave: appliedThenCut, status: false });
    const { result, state } = await runTurn({
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => {
        await approveFirst(handle);
        const { pending } = await pendingResolution(handle);
        expect(pending.reason).toContain('never confirmed');
        await handle.executeUpdate(resolveUpdate, {
          args: [{ callId: pending.callId, outcome: 'applied', argsDigest: pending.argsDigest }],
        });
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(payment.counts).toEqual({ executions: 1, effects: 1, lookups: 0 });
    expect(state.decisions).toHaveLength(1);
  });

  it('not_applied: back to waiting for approval, and it runs again only once a person approves again', async () => {
    const payment = paymentTool({ effect: 'irreversible_write', behave: cutThenApplies, status: false });
    let executionsWhileWaiting = -1;
    const { result, state } = await runTurn({
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => {
        await approveFirst(handle);
        const { pending } = await pendingResolution(handle);
        await handle.signal(resolveSignal, { callId: pending.callId, outcome: 'not_applied', argsDigest: pending.argsDigest });
        const again = await waitForState(handle, (current) => current.pendingApprovals.length > 0 && current.decisions.length === 1);
        expect(again.phase).toBe('awaiting_approval');
        executionsWhileWaiting = payment.counts.executions;
        await approveFirst(handle, 1);
      },
    });
    expect(executionsWhileWaiting).toBe(1);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 2 })]);
    expect(payment.counts).toEqual({ executions: 2, effects: 1, lookups: 0 });
    expect(state.decisions).toHaveLength(2);
  });

  it('nobody resolves it: outcome_unknown after the timeout, 1 execution', async () => {
    const payment = paymentTool({ effect: 'irreversible_write', behave: appliedThenCut, status: false });
    const { result } = await runTurn({
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => {
        await approveFirst(handle);
        await pendingResolution(handle);
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'outcome_unknown', executions: 1 })]);
    expect(payment.counts).toEqual({ executions: 1, effects: 1, lookups: 0 });
  });
});

describe('reconciliation of a cut-off irreversible write by its status check', () => {
  it('applied: success from what the check found, nobody asked', async () => {
    const payment = paymentTool({ effect: 'irreversible_write', behave: appliedThenCut });
    const { result, modelInputs, state } = await runTurn({
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => void (await approveFirst(handle)),
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(payment.counts).toEqual({ executions: 1, effects: 1, lookups: 1 });
    expect(toolMessage(modelInputs)).toMatchObject({ result: { status: 'success', data: { paid: true, from: 'ledger' } } });
    expect(state.resolutions).toEqual([]);
  });

  it('not applied: back to approval; a second approval runs it: 2 executions, 1 effect', async () => {
    const payment = paymentTool({ effect: 'irreversible_write', behave: cutThenApplies });
    const { result, state } = await runTurn({
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => {
        await approveFirst(handle);
        await approveFirst(handle, 1);
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 2 })]);
    expect(payment.counts).toEqual({ executions: 2, effects: 1, lookups: 1 });
    expect(state.decisions).toHaveLength(2);
    expect(state.resolutions).toEqual([]);
  });

  it('an attempt still inside its lease: the turn waits the lease out and looks up again before anyone is asked', async () => {
    // The first execution hangs past its 200 ms timeout without applying; its lease (timeout + 10 s) keeps it in flight.
    const payment = paymentTool({
      effect: 'irreversible_write',
      timeout: 200,
      behave: (execution, apply) => (execution === 1 ? new Promise(() => {}) : (apply(), 'paid')),
    });
    let resolutionsSeen = -1;
    const { result, state } = await runTurn({
      config: configWith(),
      tools: [payment.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => {
        await approveFirst(handle);
        // Waits in real time, the clock the lease runs by.
        const again = await waitForState(
          handle,
          (current) => current.pendingApprovals.length > 0 && current.decisions.length === 1,
          40_000,
        );
        resolutionsSeen = again.resolutions?.length ?? 0;
        await approveFirst(handle, 1);
      },
    });
    expect(resolutionsSeen).toBe(0);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 2 })]);
    expect(payment.counts).toEqual({ executions: 2, effects: 1, lookups: 2 });
    expect(state.rejectedDecisions).toEqual([]);
  });

  it('cannot tell: a person is asked (ask), or the model gets outcome_unknown at once (report)', async () => {
    const asked = paymentTool({ effect: 'irreversible_write', behave: appliedThenCut, status: () => 'unknown' });
    const { result } = await runTurn({
      config: configWith(),
      tools: [asked.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => {
        await approveFirst(handle);
        const { pending } = await pendingResolution(handle);
        expect(pending.reason).toContain('the ledger did not answer');
        await handle.signal(resolveSignal, { callId: pending.callId, outcome: 'applied', argsDigest: pending.argsDigest });
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(asked.counts).toEqual({ executions: 1, effects: 1, lookups: 1 });

    const reported = paymentTool({ effect: 'irreversible_write', behave: appliedThenCut, status: () => 'unknown' });
    const { result: report } = await runTurn({
      config: configWith({ onUnknown: 'report' }),
      tools: [reported.tool],
      input: { prompt: 'x', model: scripted([payStep, { text: 'done' }]) },
      interact: async (handle) => void (await approveFirst(handle)),
    });
    expect(report.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'outcome_unknown', executions: 1 })]);
    expect(reported.counts).toEqual({ executions: 1, effects: 1, lookups: 1 });
  });
});
