// On a real cluster (server/cluster/: separate service processes, PostgreSQL, TLS): a history host
// or the frontend SIGKILLed, PostgreSQL restarted, while turns wait for approval and while approved
// writes are in flight. Behind a flag,
// since the cluster's server is built from source the first time (minutes):
// TOLLGATE_CLUSTER_TESTS=1 npm run test:faults -- cluster (docs/operations.md#a-real-cluster).
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TollgateClient } from '../../client/tollgate-client';
import { defineTool } from '../../tools/define-tool';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { clusterClientConfig, startCluster, type Cluster } from '../../server/cluster/cluster';
import { quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { scripted } from '../helpers/turn-runner';
import { approvalSignal } from '../../workflows/messages';

const enabled = process.env.TOLLGATE_CLUSTER_TESTS === '1';
if (!enabled) console.warn('test/faults/cluster.test.ts is skipped: set TOLLGATE_CLUSTER_TESTS=1 to build and run the cluster');

const TURNS = 8;
let cluster: Cluster | undefined;
let worker: TollgateWorker | undefined;
let running: Promise<void> | undefined;
let client: TollgateClient | undefined;
/** The charges the handler really made, by idempotency key: the effect, counted where it happens. */
const charges = new Map<string, number>();

const charge = defineTool({
  name: 'charge_card',
  description: 'Charges a card.',
  input: z.strictObject({ cents: z.number().int() }),
  effect: 'irreversible_write',
  timeout: '20s',
  handler: async (_args, { idempotencyKey }) => {
    // Long enough for the kill to land while it runs.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    charges.set(idempotencyKey!, (charges.get(idempotencyKey!) ?? 0) + 1);
    return 'charged';
  },
});

beforeAll(async () => {
  if (!enabled) return;
  quietRuntime();
  cluster = await startCluster({ log: () => undefined });
  const base = testConfig({ outcomes: { onUnknown: 'report' } });
  const config = clusterClientConfig({ ...base, temporal: { ...base.temporal, taskQueue: `cluster-kill-${Date.now()}` } }, cluster);
  worker = await createWorker({ config, tools: [charge] });
  running = worker.run();
  client = await TollgateClient.connect(config);
}, 600_000);

afterAll(async () => {
  await client?.close();
  if (running) {
    worker!.shutdown();
    await running;
  }
  await cluster?.stop();
});

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Starts TURNS turns that each charge once; approves half (their charges run when the fault lands),
 * brings the fault, approves the other half while it lasts (a signal tried until the server takes
 * it: a repeat of one taken is recorded as rejected and changes nothing), ends the fault, and checks
 * every turn completed with each charge run at most once, by the handler's own count.
 */
async function chargeThrough(name: string, fault: Fault) {
  const before = new Set(charges.keys());
  const turns: Array<{ workflowId: string }> = [];
  for (let index = 0; index < TURNS; index++) {
    const script = [{ toolCalls: [{ tool: 'charge_card', args: { cents: 100 + index } }] }, { text: `turn ${index} done` }];
    turns.push(await client!.startTurn({ taskId: `cluster-${name}-${Date.now()}-${index}`, prompt: 'charge', model: scripted(script) }));
  }
  const pending = await Promise.all(
    turns.map((turn) =>
      until(async () => (await client!.state(turn.workflowId)).pendingApprovals[0], `${turn.workflowId} to wait for approval`),
    ),
  );
  for (const [index, turn] of turns.slice(0, TURNS / 2).entries()) {
    await client!.approve(turn.workflowId, pending[index].callId, { approver: 'cluster-test', argsDigest: pending[index].argsDigest });
  }
  const approveTheRest = async () => {
    for (const [index, turn] of turns.slice(TURNS / 2).entries()) {
      const waiting = pending[TURNS / 2 + index];
      const decision = { callId: waiting.callId, decision: 'approve' as const, approver: 'cluster-test', argsDigest: waiting.argsDigest };
      await until(
        async () => (await client!.client.workflow.getHandle(turn.workflowId).signal(approvalSignal, decision), true),
        `the approval of ${turn.workflowId} to be taken`,
      );
    }
  };
  await new Promise((resolve) => setTimeout(resolve, 300));
  await fault.begin();
  try {
    // With the frontend down nothing reaches the cluster: those approvals are given once it is back.
    if (fault.approvableWhileDown) await approveTheRest();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
  } finally {
    await fault.end();
  }
  if (!fault.approvableWhileDown) await approveTheRest();
  const results = await until(() => Promise.all(turns.map((turn) => client!.result(turn.workflowId))), 'every turn to end');
  expect(results.map((result) => result.status)).toEqual(Array(TURNS).fill('completed'));
  const calls = results.map((result) => result.toolCalls.find((event) => event.tool === 'charge_card')!);
  for (const call of calls) {
    expect(call.executions).toBeLessThanOrEqual(1);
    if (call.status !== 'success') expect(call.code).toBe('outcome_unknown');
  }
  const charged = [...charges].filter(([key]) => !before.has(key));
  expect(charged.filter(([, count]) => count > 1)).toEqual([]);
  expect(charged.length).toBeLessThanOrEqual(TURNS);
  const succeeded = calls.filter((call) => call.status === 'success').length;
  const unknown = calls.filter((call) => call.code === 'outcome_unknown').length;
  console.log(
    `cluster ${name}: ${TURNS} turns completed, ${succeeded} charges reported success, ${charged.length} charged by the handler (each once), ${unknown} outcome_unknown`,
  );
}

/** A fault: what brings it and what ends it, and whether a person's approval can reach a turn meanwhile. */
interface Fault {
  begin(): Promise<void>;
  end(): Promise<void>;
  approvableWhileDown: boolean;
}

/** Kills one process of the cluster (SIGKILL) and starts it again. */
const killed = (name: string): Fault => ({
  async begin() {
    cluster!.processes.get(name)!.kill('SIGKILL');
  },
  end: () => cluster!.restart(name),
  approvableWhileDown: name !== 'frontend',
});

/** The local PostgreSQL cluster, stopped (fast) and started again. */
function postgresRestart(): Fault {
  const [version, name] = spawnSync('pg_lsclusters', ['--no-header'], { encoding: 'utf8' }).stdout.trim().split(/\s+/);
  const control = (action: string) => {
    const done = spawnSync('pg_ctlcluster', [version, name, action, ...(action === 'stop' ? ['-m', 'fast'] : [])], { encoding: 'utf8' });
    if (done.status !== 0) throw new Error(`pg_ctlcluster ${action} failed: ${done.stderr}`);
  };
  // A signal sent meanwhile is refused (the frontend cannot persist it) and tried again until it is taken.
  return { begin: async () => control('stop'), end: async () => control('start'), approvableWhileDown: false };
}

describe.skipIf(!enabled)('a real cluster losing a part while turns wait for approval and approved charges run', () => {
  it(
    'a history host SIGKILLed: every waiting turn takes its approval after, no charge runs twice',
    () => chargeThrough('history-kill', killed('history-1')),
    600_000,
  );

  it('the frontend SIGKILLed and started again: the same', () => chargeThrough('frontend-kill', killed('frontend')), 600_000);

  it('PostgreSQL stopped and started again: the same', () => chargeThrough('postgres-restart', postgresRestart()), 600_000);
});
