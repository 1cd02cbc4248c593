import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalDecision, PendingApproval } from '../../common/contract/decisions';
import type { AgentTurnResult, TurnState } from '../../common/contract/turn';
import { z } from 'zod';
import { defineTool } from '../../tools/define-tool';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { createWorker } from '../../worker/create-worker';
import { decideUpdate, resolveUpdate, stateQuery } from '../../workflows/messages';
import { countingCharge } from '../helpers/counting-charge';
import { startCountingWebhookReceiver, type CountingWebhookReceiver } from '../helpers/counting-webhook-receiver';
import { notifyWorkerConfig } from '../helpers/notify-worker-config';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';
import { killWorker, startWorkerProcess } from '../helpers/worker-processes';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

// The workers read the webhook's signing secret from the variable the channel names, when they start.
const SECRET_ENV = 'TOLLGATE_NOTIFICATIONS_TEST_WEBHOOK_SECRET';
const INBOX = 'https://inbox.example.com';

let receiver: CountingWebhookReceiver;
beforeAll(async () => {
  receiver = await startCountingWebhookReceiver();
  process.env[SECRET_ENV] = receiver.secret;
});
afterAll(async () => {
  await receiver?.close();
});

/** A webhook channel to a path of the receiver: short attempts, so that a channel down costs the test little. */
function hook(path: string) {
  return { type: 'webhook', url: receiver.url(path), secretEnv: SECRET_ENV, timeout: '1s', attempts: 2 };
}

/** Config with these notification routes (and groups), channels `hook-a` and `hook-b` on the receiver. */
function notifyConfig({
  routes,
  groups,
  approvalGroups,
}: {
  routes: unknown[];
  groups?: Record<string, string[]>;
  approvalGroups?: Record<string, string[]>;
}) {
  return testConfig({
    approvals: {
      ...(approvalGroups ? { groups: approvalGroups } : {}),
      notify: { channels: { 'hook-a': hook('/a'), 'hook-b': hook('/b') }, ...(groups ? { groups } : {}), routes },
    },
    inbox: { publicUrl: INBOX },
  });
}

const sendStep = { toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Quarterly', body: 'The numbers.' } }] };
const chargeStep = { toolCalls: [{ tool: 'charge_card', args: { cents: 500 } }] };

/** The turn's first waiting call of a tool, once it waits (and `ready` holds of the state). */
async function waiting(
  handle: WorkflowHandle,
  tool: string,
  ready: (pending: PendingApproval) => boolean = () => true,
): Promise<PendingApproval> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.some((entry) => entry.tool === tool && ready(entry)));
  return state.pendingApprovals.find((entry) => entry.tool === tool)!;
}

/** Sends a decision by the `decide` update: nothing when taken, the reason when refused. */
async function decide(handle: WorkflowHandle, decision: ApprovalDecision): Promise<string | undefined> {
  try {
    await handle.executeUpdate(decideUpdate, { args: [decision] });
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
    return (error as WorkflowUpdateFailedError).cause?.message;
  }
}

function approve(pending: PendingApproval, approver = 'alice'): ApprovalDecision {
  return { callId: pending.callId, decision: 'approve', approver, argsDigest: pending.argsDigest };
}

/** The receiver's deliveries since `from` (an index into `taken`). */
const takenSince = (from: number) => receiver.taken.slice(from);

describe('notifications of a turn waiting for a person', () => {
  it('tells each channel once when the call starts waiting, reminds every remindAfter until the decision, and never after', async () => {
    const from = receiver.taken.length;
    const { tool: charge, charges } = countingCharge();
    const config = notifyConfig({ routes: [{ tools: ['send_message'], channels: ['hook-a', 'hook-b'], remindAfter: '30m' }] });
    const { result, state } = await runTurn({
      config,
      tools: [sendMessageTool({ workspace: config.workspace }), charge],
      // The turn's deadline is past the hours it waits here.
      input: { prompt: 'x', model: scripted([sendStep, chargeStep, { text: 'done' }]), limits: { deadlineMs: 24 * 3_600_000 } },
      interact: async (handle) => {
        const first = await waiting(handle, 'send_message', (entry) => entry.notifications?.length === 2);
        expect(first.notifications!.map((receipt) => [receipt.channel, receipt.status, receipt.kind]).sort()).toEqual([
          ['hook-a', 'sent', 'approval'],
          ['hook-b', 'sent', 'approval'],
        ]);
        expect(
          takenSince(from)
            .map((delivery) => delivery.path)
            .sort(),
        ).toEqual(['/a', '/b']);
        const told = takenSince(from)[0].data;
        expect(told).toMatchObject({ kind: 'approval', round: 1, callId: first.callId, tool: 'send_message' });
        expect(told.link).toBe(`${INBOX}/#/item/${encodeURIComponent(handle.workflowId)}/${first.callId}`);
        // 95 minutes of the turn's time: reminders at 30, 60 and 90, to both channels.
        await environment.env.sleep('95 minutes');
        const reminded = await waiting(handle, 'send_message', (entry) => entry.notifications?.length === 8);
        expect(reminded.notifications!.filter((receipt) => receipt.kind === 'reminder')).toHaveLength(6);
        expect(await decide(handle, approve(reminded))).toBeUndefined();
        // The next call waits with no route: three hours pass and nothing more is sent about the first.
        const second = await waiting(handle, 'charge_card');
        await environment.env.sleep('3 hours');
        expect(takenSince(from)).toHaveLength(8);
        expect(await decide(handle, approve(second))).toBeUndefined();
      },
    });
    expect(result.status).toBe('completed');
    expect(result.toolCalls.map((call) => [call.tool, call.status, call.executions])).toEqual([
      ['send_message', 'success', 1],
      ['charge_card', 'success', 1],
    ]);
    expect([...charges.values()]).toEqual([1]);
    const deliveries = takenSince(from);
    expect(deliveries).toHaveLength(8);
    expect(new Set(deliveries.map((delivery) => delivery.id)).size).toBe(8);
    expect(deliveries.filter((delivery) => delivery.data.kind === 'reminder').map((delivery) => delivery.data.notice)).toEqual([
      1, 1, 2, 2, 3, 3,
    ]);
    expect(receiver.forged).toBe(0);
    expect(state.notifications).toHaveLength(8);
    expect(state.notifications!.every((receipt) => receipt.status === 'sent')).toBe(true);
  });

  it('escalates at escalateAfter: the group is told through its route and may decide; someone in no group is refused before and after', async () => {
    const from = receiver.taken.length;
    const config = notifyConfig({
      approvalGroups: { send_message: ['alice'] },
      groups: { finance: ['carol'] },
      routes: [
        { tools: ['send_message'], channels: ['hook-a'], escalateAfter: '1h', escalateTo: 'finance' },
        { groups: ['finance'], channels: ['hook-b'] },
      ],
    });
    const { result, state } = await runTurn({
      config,
      tools: [sendMessageTool({ workspace: config.workspace })],
      input: { prompt: 'x', model: scripted([sendStep, { text: 'done' }]) },
      interact: async (handle) => {
        const first = await waiting(handle, 'send_message', (entry) => entry.notifications?.length === 1);
        expect(takenSince(from).map((delivery) => [delivery.path, delivery.data.kind])).toEqual([['/a', 'approval']]);
        expect(takenSince(from)[0].data.deciders).toEqual(['alice']);
        expect(await decide(handle, approve(first, 'carol'))).toMatch(/^carol may not decide on calls of send_message: only alice may/);
        await environment.env.sleep('61 minutes');
        const escalated = await waiting(
          handle,
          'send_message',
          (entry) => entry.escalatedTo === 'finance' && entry.notifications?.length === 2,
        );
        expect(escalated.notifications![1]).toMatchObject({ channel: 'hook-b', status: 'sent', kind: 'escalation' });
        const told = takenSince(from)[1];
        expect([told.path, told.data.kind, told.data.escalatedTo, told.data.deciders]).toEqual([
          '/b',
          'escalation',
          'finance',
          ['alice', 'carol'],
        ]);
        expect(await decide(handle, approve(escalated, 'mallory'))).toMatch(/^mallory may not decide on calls of send_message/);
        expect(await decide(handle, approve(escalated, 'carol'))).toBeUndefined();
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success', executions: 1 })]);
    expect(state.decisions).toEqual([expect.objectContaining({ decision: 'approve', approver: 'carol' })]);
    expect(state.rejectedDecisions).toHaveLength(0); // updates refuse without recording
    expect(takenSince(from)).toHaveLength(2);
  });

  it('a channel down for the whole wait: the turn completes on the decision, and its state lists the failure', async () => {
    const from = receiver.received.length;
    const config = notifyConfig({ routes: [{ tools: ['send_message'], channels: ['hook-a'] }] });
    receiver.mode = 'down';
    try {
      const { result, state } = await runTurn({
        config,
        tools: [sendMessageTool({ workspace: config.workspace })],
        input: { prompt: 'x', model: scripted([sendStep, { text: 'done' }]) },
        interact: async (handle) => {
          const failed = await waiting(handle, 'send_message', (entry) => entry.notifications?.[0]?.status === 'failed');
          expect(failed.notifications).toEqual([
            expect.objectContaining({ channel: 'hook-a', status: 'failed', attempts: 2, error: expect.stringContaining('503') }),
          ]);
          expect(await decide(handle, approve(failed))).toBeUndefined();
        },
      });
      expect(result.status).toBe('completed');
      expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
      expect(state.notifications).toEqual([expect.objectContaining({ channel: 'hook-a', status: 'failed', attempts: 2 })]);
      expect(receiver.received.slice(from)).toHaveLength(2);
    } finally {
      receiver.mode = 'ok';
    }
  });

  it('a channel that does not answer: the decision is taken and the call runs while the notification is still under way', async () => {
    const from = receiver.received.length;
    const config = notifyConfig({ routes: [{ tools: ['send_message'], channels: ['hook-a'] }] });
    receiver.mode = 'hold';
    try {
      const { result, state } = await runTurn({
        config,
        tools: [sendMessageTool({ workspace: config.workspace })],
        input: { prompt: 'x', model: scripted([sendStep, { text: 'done' }]) },
        interact: async (handle) => {
          const pending = await waiting(handle, 'send_message');
          await waitFor(() => receiver.received.length > from);
          expect(await decide(handle, approve(pending))).toBeUndefined();
        },
      });
      expect(result.status).toBe('completed');
      expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
      // Nothing came back before the turn ended: the notification was never in its way.
      expect((state as TurnState).notifications ?? []).toEqual([]);
    } finally {
      receiver.mode = 'ok';
      receiver.drop();
    }
  });
});

describe('notifications of a write whose outcome waits for a person', () => {
  it('tells of the resolution wait, and again in its round 2 after a not_applied that cannot be checked', async () => {
    const from = receiver.taken.length;
    // A payment that applies and is cut off; its status check answers only the first lookup, so a person is asked, twice.
    const ledger = new Set<string>();
    let lookups = 0;
    const input = z.strictObject({ invoice: z.string() });
    const pay = defineTool({
      name: 'pay_invoice',
      description: 'Pays an invoice.',
      input,
      effect: 'reversible_write',
      maxAttempts: 3,
      status: (_args, { idempotencyKey }) => {
        if (++lookups >= 2) throw new Error('the ledger did not answer');
        return ledger.has(idempotencyKey) ? { state: 'applied', data: { paid: true } } : 'not_applied';
      },
      handler: async (_args, { idempotencyKey }) => {
        ledger.add(idempotencyKey!);
        throw Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });
      },
    });
    const config = notifyConfig({ routes: [{ tools: ['pay_invoice'], channels: ['hook-a'] }] });
    const { result, state } = await runTurn({
      config: { ...config, outcomes: { ...config.outcomes, onUnknown: 'ask' }, retry: { ...config.retry, initialInterval: '100ms' } },
      tools: [pay],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'pay_invoice', args: { invoice: 'INV-7' } }] }, { text: 'done' }]) },
      interact: async (handle) => {
        const resolve = async (round: number, outcome: 'applied' | 'not_applied') => {
          const seen = await waitForState(handle, (current) =>
            (current.pendingResolutions ?? []).some((entry) => entry.round === round && entry.notifications?.length === 1),
          );
          const pending = seen.pendingResolutions![0];
          expect(pending.notifications).toEqual([expect.objectContaining({ channel: 'hook-a', status: 'sent', kind: 'resolution' })]);
          const decision = {
            callId: pending.callId,
            outcome,
            argsDigest: pending.argsDigest,
            resolver: 'maria',
            ...(round > 1 ? { round } : {}),
          };
          await handle.executeUpdate(resolveUpdate, { args: [decision] });
        };
        await resolve(1, 'not_applied');
        await resolve(2, 'applied');
      },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'pay_invoice', status: 'success' })]);
    const told = takenSince(from);
    expect(told.map((delivery) => [delivery.data.kind, delivery.data.round])).toEqual([
      ['resolution', 1],
      ['resolution', 2],
    ]);
    expect(new Set(told.map((delivery) => delivery.id)).size).toBe(2);
    expect(state.notifications!.map((receipt) => [receipt.kind, receipt.round, receipt.status])).toEqual([
      ['resolution', 1, 'sent'],
      ['resolution', 2, 'sent'],
    ]);
  });
});

describe('a worker killed while its notification is on its way', () => {
  it('the notification is sent again under the same id by the worker that takes over: one notification per id at the receiver', async () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-notify-kill-'));
    const bundleFile = path.join(folder, 'workflows.js');
    writeFileSync(bundleFile, environment.workflowBundle.code);
    const settings = {
      address: environment.env.address,
      taskQueue: `notify-kill-${randomUUID()}`,
      workspace: path.join(folder, 'workspace'),
      sqliteFile: path.join(folder, 'intents.db'),
      hookUrl: receiver.url('/kill'),
    };
    const config = notifyWorkerConfig(settings);
    process.env.TOLLGATE_NOTIFY_WORKER_SECRET = receiver.secret;
    const from = { received: receiver.received.length, taken: receiver.taken.length };
    receiver.mode = 'hold';
    const first = await startWorkerProcess('notify-worker', { ...settings, bundleFile, secret: receiver.secret });
    const handle = await environment.env.client.workflow.start('agentTurn', {
      workflowId: `turn-${randomUUID()}`,
      taskQueue: settings.taskQueue,
      args: [{ taskId: 'task-kill', prompt: 'x', model: scripted([sendStep, { text: 'done' }]) }],
    });
    let second: Awaited<ReturnType<typeof createWorker>> | undefined;
    try {
      await waitFor(() => receiver.received.length > from.received);
      // The receiver holds the request: the worker that sent it dies before it hears an answer.
      await killWorker(first);
      receiver.mode = 'ok';
      receiver.drop();
      second = await createWorker({ config, connection: environment.env.nativeConnection, workflowBundle: environment.workflowBundle });
      const { result, state } = await second.runUntil(async () => {
        // The worker that takes over sends it again once the first's send timed out (the channel's bound and 5 s).
        await waitFor(() => receiver.taken.length > from.taken, 60_000);
        const pending = await waiting(handle, 'send_message', (entry) => entry.notifications?.[0]?.status === 'sent');
        expect(await decide(handle, approve(pending))).toBeUndefined();
        const ended = (await handle.result()) as AgentTurnResult;
        return { result: ended, state: await handle.query(stateQuery) };
      });
      expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success', executions: 1 })]);
      const received = receiver.received.slice(from.received);
      const taken = receiver.taken.slice(from.taken);
      expect(received).toHaveLength(2);
      expect(new Set(received.map((delivery) => delivery.id)).size).toBe(1);
      expect(taken.map((delivery) => delivery.id)).toEqual([received[0].id]);
      expect(state.notifications).toEqual([expect.objectContaining({ id: received[0].id, status: 'sent', attempts: 1 })]);
    } finally {
      receiver.mode = 'ok';
      await killWorker(first);
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

/** Polls a condition of this process (the receiver's counts) every 20 ms, up to `timeoutMs`. */
async function waitFor(ready: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (let waited = 0; !ready(); waited += 20) {
    if (waited > timeoutMs) throw new Error(`the receiver got nothing within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
