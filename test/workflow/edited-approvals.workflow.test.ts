import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { TurnState } from '../../common/contract/turn';
import { argsDigest } from '../../tools/canonical-json';
import { defineTool } from '../../tools/define-tool';
import { intentKey } from '../../tools/intent-key';
import { approvalSignal, decideUpdate } from '../../workflows/messages';
import { scripted, useTurnRunner, waitForState } from '../helpers/turn-runner';

const runTurn = useTurnRunner();

/** An irreversible refund whose handler records every execution's arguments and idempotency key. */
function refundTool() {
  const executions: Array<{ args: { order: string; amount: number }; key?: string }> = [];
  const tool = defineTool({
    name: 'refund',
    description: 'Refunds an order.',
    input: z.strictObject({
      order: z.string().describe('The order id.'),
      amount: z.number().int().positive().max(10_000).describe('The amount to refund, in cents.'),
    }),
    effect: 'irreversible_write',
    authorize: ({ order }) => (order.startsWith('ORD-') ? undefined : `order ${order} is not an order id of this shop`),
    handler: ({ order, amount }, { idempotencyKey }) => {
      executions.push({ args: { order, amount }, key: idempotencyKey });
      return { refunded: amount, order };
    },
  });
  return { tool, executions };
}

const original = { order: 'ORD-7', amount: 2_000 };
const refundStep = { toolCalls: [{ tool: 'refund', args: original }] };

async function waitingCall(handle: WorkflowHandle, decided = 0): Promise<{ state: TurnState; callId: string; digest: string }> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0 && current.decisions.length === decided);
  return { state, callId: state.pendingApprovals[0].callId, digest: state.pendingApprovals[0].argsDigest };
}

describe('edited approvals', () => {
  it('runs the call with the edited arguments, under their own digest and key, and tells the model', async () => {
    const refund = refundTool();
    const edited = { order: 'ORD-7', amount: 200 };
    let receipt: unknown;
    const { result, modelInputs, state } = await runTurn({
      tools: [refund.tool],
      input: { prompt: 'x', model: scripted([refundStep, { text: 'done' }]) },
      interact: async (handle) => {
        const { callId, digest } = await waitingCall(handle);
        receipt = await handle.executeUpdate(decideUpdate, {
          args: [{ callId, decision: 'approve', argsDigest: digest, args: edited, approver: 'maria' }],
        });
      },
    });
    expect(receipt).toEqual({ callId: 'call-0-0', decision: 'approve', accepted: true, editedDigest: argsDigest(edited) });
    expect(refund.executions).toEqual([{ args: edited, key: intentKey(refund.tool, edited, 'task-1') }]);
    expect(intentKey(refund.tool, edited, 'task-1')).not.toBe(intentKey(refund.tool, original, 'task-1'));
    expect(result.toolCalls).toEqual([
      expect.objectContaining({
        status: 'success',
        executions: 1,
        edit: { originalDigest: argsDigest(original), editedDigest: argsDigest(edited), editor: 'maria' },
      }),
    ]);
    const seen = modelInputs[1].messages.find((message) => message.role === 'tool');
    expect(seen).toMatchObject({
      result: {
        status: 'success',
        data: { refunded: 200 },
        edited: { by: 'maria', args: edited, message: expect.stringContaining('edited by maria') },
      },
    });
    expect(state.decisions).toEqual([expect.objectContaining({ approver: 'maria', args: edited, editedDigest: argsDigest(edited) })]);
  });

  it('rejects an edit that does not fit the schema to the update’s caller; the call keeps waiting and runs as asked', async () => {
    const refund = refundTool();
    const { result } = await runTurn({
      tools: [refund.tool],
      input: { prompt: 'x', model: scripted([refundStep, { text: 'done' }]) },
      interact: async (handle) => {
        const { callId, digest } = await waitingCall(handle);
        const invalid = { callId, decision: 'approve' as const, argsDigest: digest, args: { order: 'ORD-7', amount: 'lots' } };
        const refused = await handle.executeUpdate(decideUpdate, { args: [invalid] }).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
        expect(String((refused as WorkflowUpdateFailedError).cause?.message)).toMatch(
          /edited arguments are refused \(invalid_arguments\): amount/,
        );
        const still = await waitingCall(handle);
        expect(still.callId).toBe(callId);
        await handle.executeUpdate(decideUpdate, { args: [{ callId, decision: 'approve', argsDigest: digest }] });
      },
    });
    expect(refund.executions.map((execution) => execution.args)).toEqual([original]);
    expect(result.toolCalls).toEqual([expect.not.objectContaining({ edit: expect.anything() })]);
  });

  it('records an edit its authorization refuses, sent as a signal, as rejected; nothing runs', async () => {
    const refund = refundTool();
    const { result, state } = await runTurn({
      tools: [refund.tool],
      input: { prompt: 'x', model: scripted([refundStep, { text: 'done' }]) },
      interact: async (handle) => {
        const { callId, digest } = await waitingCall(handle);
        await handle.signal(approvalSignal, { callId, decision: 'approve', argsDigest: digest, args: { order: 'XYZ-1', amount: 200 } });
        await waitForState(handle, (current) => current.rejectedDecisions.length === 1);
        await handle.signal(approvalSignal, { callId, decision: 'deny', argsDigest: digest, reason: 'asked the customer' });
      },
    });
    expect(state.rejectedDecisions).toEqual([
      expect.objectContaining({
        why: 'the edited arguments are refused (forbidden): order XYZ-1 is not an order id of this shop',
        decision: expect.objectContaining({ args: { order: 'XYZ-1', amount: 200 } }),
      }),
    ]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'denied', executions: 0 })]);
    expect(refund.executions).toEqual([]);
  });

  it('gives an edit its own intent: the same original call, approved as asked later, runs too', async () => {
    const refund = refundTool();
    const store = openSqliteStore(':memory:');
    const edited = { order: 'ORD-7', amount: 200 };
    const { result } = await runTurn({
      store,
      tools: [refund.tool],
      input: { prompt: 'x', model: scripted([refundStep, refundStep, { text: 'done' }]) },
      interact: async (handle) => {
        const first = await waitingCall(handle);
        await handle.signal(approvalSignal, { callId: first.callId, decision: 'approve', argsDigest: first.digest, args: edited });
        const second = await waitingCall(handle, 1);
        expect(second.callId).toBe('call-1-0');
        await handle.signal(approvalSignal, { callId: second.callId, decision: 'approve', argsDigest: second.digest });
      },
    });
    expect(refund.executions.map((execution) => execution.args)).toEqual([edited, original]);
    expect(result.toolCalls.map((event) => [event.status, event.executions, event.edit?.editedDigest])).toEqual([
      ['success', 1, argsDigest(edited)],
      ['success', 1, undefined],
    ]);
    const keys = (await store.listTask('task-1')).map((record) => record.key).sort();
    expect(keys).toEqual([intentKey(refund.tool, edited, 'task-1'), intentKey(refund.tool, original, 'task-1')].sort());
    await store.close();
  });
});
