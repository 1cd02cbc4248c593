import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openConfiguredStore } from '../../intents/open-store';
import { builtInTools } from '../../tools/built-in';
import { defineTool } from '../../tools/define-tool';
import { openDetails, sendFromUi, shownSignalJson, untilShown, useWebUi, WEB_UI_OUTPUT as OUTPUT } from '../helpers/web-ui';
import { scripted, waitForState } from '../helpers/turn-runner';

/**
 * A payment service with a real effect, a ledger of the intents it applied: each payment applies
 * and then the connection drops, and the service cannot tell for a payment it holds whether it has
 * settled. So a turn's payment ends with its outcome unknown, and a person is asked.
 */
const ledger = new Set<string>();
const payments = { executions: 0, lookups: 0 };
const payInvoice = defineTool({
  name: 'pay_invoice',
  description: 'Pays an invoice.',
  input: z.strictObject({ invoice: z.string().describe('The invoice to pay.') }),
  effect: 'reversible_write',
  timeout: 5_000,
  maxAttempts: 3,
  status: (_args, { idempotencyKey }) => {
    payments.lookups++;
    return ledger.has(idempotencyKey) ? 'unknown' : 'not_applied';
  },
  handler: (_args, { idempotencyKey }) => {
    payments.executions++;
    ledger.add(idempotencyKey!);
    throw Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });
  },
});

const ui = useWebUi({
  config: { retry: { initialInterval: '100ms', maximumInterval: '1s' }, outcomes: { onUnknown: 'ask', resolveTimeout: '30m' } },
  tools: (config) => [...builtInTools(config), payInvoice],
});

/** The signals the turn's history recorded, by name, with the JSON each carried. */
async function signalsInHistory(workflowId: string): Promise<Array<{ name: string; payload: unknown }>> {
  const history = await ui.client.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .map((event) => event.workflowExecutionSignaledEventAttributes)
    .filter((signaled) => signaled !== null && signaled !== undefined)
    .map((signaled) => ({
      name: signaled.signalName ?? '',
      payload: JSON.parse(Buffer.from(signaled.input!.payloads![0].data!).toString('utf8')) as unknown,
    }));
}

describe('deciding from the Temporal Web UI with its signal action', () => {
  it('approval: the JSON the details show, sent from Send a Signal with the approver named, runs the call once', async () => {
    const handle = await ui.client.startTurn({ taskId: 'web-ui-approve', prompt: 'Who must approve a refund above 2,000 EUR?' });
    const waiting = await waitForState(
      ui.client.client.workflow.getHandle(handle.workflowId),
      (state) => state.pendingApprovals.length > 0,
    );
    const page = await openDetails(ui, handle);
    const shown = await shownSignalJson(page, 'approval');
    expect(shown).toEqual({ callId: 'call-3-0', decision: 'approve', argsDigest: waiting.pendingApprovals[0].argsDigest });

    // The person gives the decision shown, with their name and a reason.
    const decision = { ...shown, approver: 'maria', reason: 'checked in the Web UI' };
    await sendFromUi(page, 'approval', JSON.stringify(decision), 'signal-approval.png');

    const result = await ui.client.result(handle.workflowId);
    expect(result.toolCalls.at(-1)).toMatchObject({ callId: 'call-3-0', tool: 'send_message', status: 'success', executions: 1 });
    const state = await ui.client.state(handle.workflowId);
    expect(state.decisions).toEqual([{ callId: 'call-3-0', decision: 'approve', approver: 'maria', reason: 'checked in the Web UI' }]);
    expect(state.rejectedDecisions).toEqual([]);
    expect(await signalsInHistory(handle.workflowId)).toEqual([{ name: 'approval', payload: decision }]);
    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.getByText('User Metadata', { exact: true }).click();
    await untilShown(page, (text) => /call-3-0 · send_message · irreversible_write · success · 1 execution/.test(text), 'the call as run');
    await page.screenshot({ path: path.join(OUTPUT, 'signal-approval-done.png'), fullPage: true });
    await page.close();
  });

  it('resolution: a write whose outcome is unknown, resolved applied from Send a Signal, succeeds without running again', async () => {
    const handle = await ui.client.startTurn({
      taskId: 'web-ui-resolve',
      prompt: 'Pay invoice INV-7.',
      model: scripted([{ toolCalls: [{ tool: 'pay_invoice', args: { invoice: 'INV-7' } }] }, { text: 'Paid.' }]),
    });
    const waiting = await waitForState(
      ui.client.client.workflow.getHandle(handle.workflowId),
      (state) => (state.pendingResolutions?.length ?? 0) > 0,
    );
    expect(waiting.phase).toBe('awaiting_resolution');
    const page = await openDetails(ui, handle);
    const shown = await shownSignalJson(page, 'resolve');
    expect(shown).toEqual({ callId: 'call-0-0', outcome: 'applied', argsDigest: waiting.pendingResolutions![0].argsDigest, note: '…' });
    expect(payments.executions).toBe(1);

    // The person found the payment in the bank statement: the shown JSON, their name and their note.
    const resolution = { ...shown, resolver: 'maria', note: 'in the bank statement' };
    await sendFromUi(page, 'resolve', JSON.stringify(resolution), 'signal-resolve.png');

    const result = await ui.client.result(handle.workflowId);
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ callId: 'call-0-0', tool: 'pay_invoice', status: 'success', executions: 1 }),
    ]);
    expect(payments).toEqual({ executions: 1, lookups: 2 });
    const state = await ui.client.state(handle.workflowId);
    expect(state.pendingResolutions).toEqual([]);
    expect(state.resolutions).toEqual([expect.objectContaining({ callId: 'call-0-0', outcome: 'applied', resolver: 'maria' })]);
    // The intent is committed with the person's word as its receipt.
    const store = openConfiguredStore(ui.config);
    try {
      const [record] = await store.listTask('web-ui-resolve');
      expect(record).toMatchObject({
        state: 'committed',
        receipt: { status: 'success', data: { resolvedByPerson: true, resolver: 'maria', note: 'in the bank statement' } },
      });
    } finally {
      await store.close();
    }
    expect(await signalsInHistory(handle.workflowId)).toEqual([{ name: 'resolve', payload: resolution }]);
    await page.close();
  });

  it('hostile: an approval sent from the Web UI with a digest other than the one shown is recorded as rejected; the call never runs', async () => {
    const handle = await ui.client.startTurn({ taskId: 'web-ui-wrong-digest', prompt: 'Who must approve a refund above 2,000 EUR?' });
    const turn = ui.client.client.workflow.getHandle(handle.workflowId);
    await waitForState(turn, (state) => state.pendingApprovals.length > 0);
    const page = await openDetails(ui, handle);
    const shown = await shownSignalJson(page, 'approval');
    const digest = String(shown.argsDigest);
    const other = `${digest.slice(0, -1)}${digest.endsWith('0') ? '1' : '0'}`;
    await sendFromUi(page, 'approval', JSON.stringify({ ...shown, argsDigest: other, approver: 'mallory' }), 'signal-wrong-digest.png');
    await page.close();

    const state = await waitForState(turn, (current) => current.rejectedDecisions.length > 0);
    expect(state.rejectedDecisions).toEqual([
      expect.objectContaining({
        decision: expect.objectContaining({ argsDigest: other, approver: 'mallory' }),
        why: 'argsDigest does not match the arguments of call call-3-0',
      }),
    ]);
    expect(state.decisions).toEqual([]);
    expect(state.pendingApprovals.map((pending) => pending.callId)).toEqual(['call-3-0']);
    expect(state.toolCalls.map((event) => event.tool)).not.toContain('send_message');

    // It still waits; denied now, it ends without a single execution.
    await ui.client.deny(handle.workflowId, 'call-3-0', { reason: 'browser test', argsDigest: digest });
    expect((await ui.client.result(handle.workflowId)).toolCalls.at(-1)).toMatchObject({
      tool: 'send_message',
      status: 'denied',
      executions: 0,
    });
  });
});
