import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolResult } from '../../common/contract/tools';
import { defineTool, type StatusAnswer } from '../../tools/define-tool';
import { approvalSignal } from '../../workflows/messages';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

/** A send that counts its real executions, and a put that counts its own. */
function countingTools() {
  const counts = { sends: 0, puts: 0 };
  const sent = new Set<string>();
  const send = defineTool({
    name: 'send_note',
    description: 'Sends a note.',
    input: z.strictObject({ to: z.string().describe('Who gets it.'), text: z.string().describe('What it says.') }),
    effect: 'irreversible_write',
    approvalTimeout: '1 minute',
    handler: ({ to }) => {
      counts.sends++;
      return { sentTo: to, number: counts.sends };
    },
  });
  const put = defineTool({
    name: 'put_label',
    description: 'Puts a label on a card.',
    input: z.strictObject({ card: z.string().describe('The card.'), label: z.string().describe('The label.') }),
    effect: 'reversible_write',
    status: (_args, { idempotencyKey }): StatusAnswer => (sent.has(idempotencyKey) ? 'applied' : 'not_applied'),
    handler: (_args, { idempotencyKey }) => {
      counts.puts++;
      sent.add(idempotencyKey!);
      return { labelled: true };
    },
  });
  return { send, put, counts };
}

const sendCall = { tool: 'send_note', args: { to: 'ana', text: 'the report is ready' } };

/** What the model was sent for each call, by call id. */
function resultsSent(modelInputs: Array<{ messages: Array<{ role: string }> }>): Map<string, ToolResult> {
  const results = new Map<string, ToolResult>();
  for (const input of modelInputs)
    for (const message of input.messages)
      if (message.role === 'tool') {
        const tool = message as unknown as { callId: string; result: ToolResult };
        results.set(tool.callId, tool.result);
      }
  return results;
}

describe('a repeat is known as a repeat', () => {
  it('answers a send repeated three times in one step and once more in the next from the first receipt: 1 approval, 1 execution', async () => {
    const { send, put, counts } = countingTools();
    const approvalsAsked = new Set<string>();
    const { result, modelInputs } = await runTurn({
      tools: [send, put],
      input: {
        taskId: `task-${randomUUID()}`,
        prompt: 'tell ana',
        model: scripted([{ toolCalls: [sendCall, sendCall, sendCall] }, { toolCalls: [sendCall] }, { text: 'told her' }]),
      },
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        for (const pending of state.pendingApprovals) approvalsAsked.add(pending.callId);
        const [first] = state.pendingApprovals;
        await handle.signal(approvalSignal, { callId: first.callId, decision: 'approve', argsDigest: first.argsDigest });
      },
    });
    expect(result.status).toBe('completed');
    expect(counts.sends).toBe(1);
    expect([...approvalsAsked]).toEqual(['call-0-0']);
    expect(
      result.toolCalls.map((event) => [event.callId, event.status, event.executions, event.repeatOf, event.approval?.decision]),
    ).toEqual([
      ['call-0-0', 'success', 1, undefined, 'approve'],
      ['call-0-1', 'success', 0, 'call-0-0', undefined],
      ['call-0-2', 'success', 0, 'call-0-0', undefined],
      ['call-1-0', 'success', 0, 'call-0-0', undefined],
    ]);
    // The model is told each repeat was not run again, with the first call's result.
    const sent = resultsSent(modelInputs);
    const first = sent.get('call-0-0')!;
    expect(first.repeated).toBeUndefined();
    for (const callId of ['call-0-1', 'call-0-2', 'call-1-0']) {
      const repeat = sent.get(callId)!;
      expect(repeat.data).toEqual(first.data);
      expect(repeat.repeated).toEqual({ of: 'call-0-0', message: expect.stringContaining('it was not run again') });
    }
  });

  it('answers a repeated reversible write from its receipt while its status check agrees: 1 execution, the repeat names the first', async () => {
    const { send, put, counts } = countingTools();
    const putCall = { tool: 'put_label', args: { card: 'c1', label: 'done' } };
    const { result } = await runTurn({
      tools: [send, put],
      input: {
        taskId: `task-${randomUUID()}`,
        prompt: 'label it',
        model: scripted([{ toolCalls: [putCall, putCall] }, { text: 'labelled' }]),
      },
    });
    expect(counts.puts).toBe(1);
    expect(result.toolCalls.map((event) => [event.status, event.executions, event.repeatOf])).toEqual([
      ['success', 1, undefined],
      ['success', 0, 'call-0-0'],
    ]);
  });

  it('asks a person again for a send whose first call was denied: a denial leaves nothing to repeat', async () => {
    const { send, put, counts } = countingTools();
    const { result } = await runTurn({
      tools: [send, put],
      input: { taskId: `task-${randomUUID()}`, prompt: 'tell ana', model: scripted([{ toolCalls: [sendCall, sendCall] }, { text: 'ok' }]) },
      interact: async (handle) => {
        const first = await waitForState(handle, (current) => current.pendingApprovals.some((pending) => pending.callId === 'call-0-0'));
        const [pending] = first.pendingApprovals;
        await handle.signal(approvalSignal, { callId: pending.callId, decision: 'deny', argsDigest: pending.argsDigest });
        const second = await waitForState(handle, (current) => current.pendingApprovals.some((waiting) => waiting.callId === 'call-0-1'));
        const [again] = second.pendingApprovals;
        await handle.signal(approvalSignal, { callId: again.callId, decision: 'approve', argsDigest: again.argsDigest });
      },
    });
    expect(counts.sends).toBe(1);
    expect(result.toolCalls.map((event) => [event.status, event.executions, event.repeatOf])).toEqual([
      ['denied', 0, undefined],
      ['success', 1, undefined],
    ]);
  });
});
