// On a real cluster (server/cluster/: separate service processes, PostgreSQL, TLS): a history host
// or the frontend SIGKILLed, a history host's shards moved to the other host, PostgreSQL restarted,
// while turns wait for approval and while approved writes are in flight; and a deploy by worker
// versioning while the cluster carries waiting turns. Behind a flag, since the cluster's server is
// built from source the first time (minutes): npm run test:cluster (docs/operations.md#a-real-cluster).
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { clusterClientConfig, historyShards, startCluster, type Cluster } from '../../server/cluster/cluster';
import { deploymentStatus, promoteBuild } from '../../client/deployments';
import type { AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { buildIdOfBundle } from '../../worker/deployment';
import { bundleWorkflows } from '../../testing/servers';
import { quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { scripted } from '../helpers/turn-runner';
import { countingCharge } from '../helpers/counting-charge';
import { until } from '../helpers/until';
import { build, buildsOf, events, firstActivityOf, identitiesOf } from '../helpers/deploy-histories';
import { approvalSignal } from '../../workflows/messages';

const enabled = process.env.TOLLGATE_CLUSTER_TESTS === '1';
if (!enabled) console.warn('test/faults/cluster.test.ts is skipped: set TOLLGATE_CLUSTER_TESTS=1 to build and run the cluster');

const TURNS = 8;
let cluster: Cluster | undefined;
let worker: TollgateWorker | undefined;
let running: Promise<void> | undefined;
let client: TollgateClient | undefined;
let base: TollgateConfig;
// Long enough for the kill to land while a charge runs.
const { tool: charge, charges } = countingCharge({ delayMs: 1_500, timeout: '20s' });

beforeAll(async () => {
  if (!enabled) return;
  quietRuntime();
  cluster = await startCluster({ log: () => undefined });
  base = testConfig({ outcomes: { onUnknown: 'report' } });
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

/** Waits for `probe` (the shared helper, probe first, two minutes by default). */
const waitFor = <T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 120_000) => until(what, probe, timeoutMs);

/** Starts `count` turns on `tollgate` that each charge once, and waits until each waits for its approval. */
async function chargingTurns(tollgate: TollgateClient, name: string, count: number) {
  const turns: Array<{ workflowId: string }> = [];
  for (let index = 0; index < count; index++) {
    const script = [{ toolCalls: [{ tool: 'charge_card', args: { cents: 100 + index } }] }, { text: `turn ${index} done` }];
    turns.push(await tollgate.startTurn({ taskId: `cluster-${name}-${Date.now()}-${index}`, prompt: 'charge', model: scripted(script) }));
  }
  const pending = await Promise.all(
    turns.map((turn) =>
      waitFor(async () => (await tollgate.state(turn.workflowId)).pendingApprovals[0], `${turn.workflowId} to wait for approval`),
    ),
  );
  return turns.map((turn, index) => ({ workflowId: turn.workflowId, pending: pending[index] }));
}

/** Each turn completed, each charge run at most once by the handler's own count; returns the counts. */
function checkCharges(results: AgentTurnResult[], before: Set<string>) {
  expect(results.map((result) => result.status)).toEqual(Array(results.length).fill('completed'));
  const calls = results.map((result) => result.toolCalls.find((event) => event.tool === 'charge_card')!);
  for (const call of calls) {
    expect(call.executions).toBeLessThanOrEqual(1);
    if (call.status !== 'success') expect(call.code).toBe('outcome_unknown');
  }
  const charged = [...charges].filter(([key]) => !before.has(key));
  expect(charged.filter(([, count]) => count > 1)).toEqual([]);
  expect(charged.length).toBeLessThanOrEqual(results.length);
  return {
    succeeded: calls.filter((call) => call.status === 'success').length,
    unknown: calls.filter((call) => call.code === 'outcome_unknown').length,
    charged: charged.length,
  };
}

/**
 * Starts TURNS turns that each charge once; approves half (their charges run when the fault lands),
 * brings the fault, approves the other half while it lasts (a signal tried until the server takes
 * it: a repeat of one taken is recorded as rejected and changes nothing), ends the fault, and checks
 * every turn completed with each charge run at most once, by the handler's own count.
 */
async function chargeThrough(name: string, fault: Fault) {
  const before = new Set(charges.keys());
  const turns = await chargingTurns(client!, name, TURNS);
  for (const turn of turns.slice(0, TURNS / 2)) {
    await client!.approve(turn.workflowId, turn.pending.callId, { approver: 'cluster-test', argsDigest: turn.pending.argsDigest });
  }
  const approveTheRest = async () => {
    for (const turn of turns.slice(TURNS / 2)) {
      const decision = {
        callId: turn.pending.callId,
        decision: 'approve' as const,
        approver: 'cluster-test',
        argsDigest: turn.pending.argsDigest,
      };
      await waitFor(
        async () => (await client!.client.workflow.getHandle(turn.workflowId).signal(approvalSignal, decision), true),
        `the approval of ${turn.workflowId} to be taken`,
      );
    }
  };
  const results = () => waitFor(() => Promise.all(turns.map((turn) => client!.result(turn.workflowId))), 'every turn to end');
  await new Promise((resolve) => setTimeout(resolve, 300));
  await fault.begin();
  let ended: AgentTurnResult[] | undefined;
  try {
    // With the frontend down nothing reaches the cluster: those approvals are given once it is back.
    if (fault.approvableWhileDown) await approveTheRest();
    // A fault that the cluster heals itself lasts until every turn ended; the others 3 s.
    if (fault.completesWhileDown) ended = await results();
    else await new Promise((resolve) => setTimeout(resolve, 3_000));
  } finally {
    await fault.end();
  }
  if (!fault.approvableWhileDown) await approveTheRest();
  const counts = checkCharges(ended ?? (await results()), before);
  console.log(
    `cluster ${name}: ${TURNS} turns completed, ${counts.succeeded} charges reported success, ${counts.charged} charged by the handler (each once), ${counts.unknown} outcome_unknown`,
  );
}

/** A fault: what brings it and what ends it, whether a person's approval can reach a turn meanwhile, and whether turns complete before it ends. */
interface Fault {
  begin(): Promise<void>;
  end(): Promise<void>;
  approvableWhileDown: boolean;
  completesWhileDown?: boolean;
}

/** Kills one process of the cluster (SIGKILL) and starts it again. */
const killed = (name: string): Fault => ({
  async begin() {
    cluster!.processes.get(name)!.kill('SIGKILL');
  },
  end: () => cluster!.restart(name),
  approvableWhileDown: name !== 'frontend',
});

/**
 * Kills history-1 and keeps it down until the turns completed: the cluster's membership moves its
 * shards to history-2 (seen in each host's own shard gauge), which then serves every turn. Started
 * again, history-1 takes its share back.
 */
function shardsMoved(): Fault & { seen: string[] } {
  const seen: string[] = [];
  const note = async (when: string) => seen.push(`${when} ${JSON.stringify(await historyShards())}`);
  return {
    seen,
    async begin() {
      await note('before');
      const before = await historyShards();
      expect(before['history-1']).toBeGreaterThan(0);
      cluster!.processes.get('history-1')!.kill('SIGKILL');
      await waitFor(async () => ((await historyShards())['history-2'] === 8 ? true : undefined), 'history-2 to hold all 8 shards', 60_000);
      await note('moved');
    },
    async end() {
      await note('turns ended');
      await cluster!.restart('history-1');
      await waitFor(async () => ((await historyShards())['history-1'] > 0 ? true : undefined), 'history-1 to take shards back', 60_000);
      await note('after restart');
    },
    approvableWhileDown: true,
    completesWhileDown: true,
  };
}

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

// The deploy runs first, on a cluster no fault has just shaken: after the four faults, one run waited over 120 s
// for the server to list the new build (the cluster's own deployment bookkeeping still recovering), one did not.
describe.skipIf(!enabled)('a deploy by worker versioning while the cluster carries waiting turns', () => {
  it('keeps each waiting turn on the build that started it (each charge once), sends new turns to the promoted build, and drains the old one', async () => {
    const deploymentName = `cluster-deploy-${Date.now()}`;
    const config = clusterClientConfig(
      {
        ...base,
        temporal: {
          ...base.temporal,
          taskQueue: `${deploymentName}-queue`,
          deployment: { ...base.temporal.deployment, name: deploymentName },
        },
      },
      cluster!,
    );
    const v1Bundle: WorkflowBundleWithSourceMap = await bundleWorkflows();
    const v2Bundle = await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, '..', 'fixtures', 'deploy-v2-workflows.ts'),
      logger: new DefaultLogger('WARN'),
    });
    const [v1Id, v2Id] = [buildIdOfBundle(v1Bundle.code), buildIdOfBundle(v2Bundle.code)];
    const workers: Array<{ worker: TollgateWorker; done: Promise<void> }> = [];
    const startWorker = async (bundle: WorkflowBundleWithSourceMap, identity: string, makeCurrent: 'on-start' | 'manual') => {
      const worker = await createWorker({
        config: { ...config, temporal: { ...config.temporal, deployment: { ...config.temporal.deployment, makeCurrent } } },
        tools: [charge],
        workflowBundle: bundle,
        workerOptions: { identity },
      });
      const entry = { worker, done: worker.run() };
      workers.push(entry);
      return entry;
    };
    const tollgate = await TollgateClient.connect(config);
    const status = () => deploymentStatus(tollgate.client, deploymentName);
    try {
      // Build v1 serves four turns that wait for approval.
      const v1 = await startWorker(v1Bundle, 'v1-worker', 'on-start');
      expect(await v1.worker.madeCurrent).toEqual({ made: 'current' });
      const before = new Set(charges.keys());
      const waiting = await chargingTurns(tollgate, 'deploy-v1', 4);

      // Build v2 starts without taking work and is promoted, as `tollgate deploy promote` does.
      const v2 = await startWorker(v2Bundle, 'v2-worker', 'manual');
      expect(await v2.worker.madeCurrent).toMatchObject({ made: 'not_asked' });
      await waitFor(async () => (await status()).builds.find((entry) => entry.buildId === v2Id), 'v2 to be listed');
      expect(await promoteBuild(tollgate.client, { deploymentName, buildId: v2Id })).toMatchObject({ previous: v1Id });
      expect(
        await waitFor(async () => {
          const v1Status = await build(status(), v1Id);
          return v1Status.state === 'draining' && v1Status.waitingForPerson === 4 ? v1Status : undefined;
        }, 'v1 to drain with its 4 waiting turns'),
      ).toMatchObject({ openTurns: 4, safeToStop: false });

      // A new turn goes to v2 (its first activity is v2's).
      const [fresh] = await chargingTurns(tollgate, 'deploy-v2', 1);
      expect(firstActivityOf(await events(tollgate.client, fresh.workflowId))).toBe('turnSettings');

      // The waiting turns, approved now, finish on v1: every task and activity on v1, each charge once.
      for (const turn of waiting) {
        await tollgate.approve(turn.workflowId, turn.pending.callId, { approver: 'cluster-test', argsDigest: turn.pending.argsDigest });
      }
      const results = await waitFor(() => Promise.all(waiting.map((turn) => tollgate.result(turn.workflowId))), 'the v1 turns to end');
      const counts = checkCharges(results, before);
      expect(counts).toEqual({ succeeded: 4, unknown: 0, charged: 4 });
      for (const turn of waiting) {
        const history = await events(tollgate.client, turn.workflowId);
        expect(buildsOf(history)).toEqual([v1Id]);
        expect(identitiesOf(history)).toEqual(['v1-worker']);
        expect(firstActivityOf(history)).not.toBe('turnSettings');
      }

      // v1 runs nothing more: drained, safe to stop. The v2 turn finishes on v2.
      expect(
        await waitFor(async () => {
          const v1Status = await build(status(), v1Id);
          return v1Status.safeToStop ? v1Status : undefined;
        }, 'v1 to be safe to stop'),
      ).toMatchObject({ state: 'drained', openTurns: 0 });
      await tollgate.approve(fresh.workflowId, fresh.pending.callId, { approver: 'cluster-test', argsDigest: fresh.pending.argsDigest });
      const freshResult = await tollgate.result(fresh.workflowId);
      expect(freshResult.status).toBe('completed');
      expect(freshResult.toolCalls.find((call) => call.tool === 'charge_card')).toMatchObject({ status: 'success', executions: 1 });
      const freshHistory = await events(tollgate.client, fresh.workflowId);
      expect(buildsOf(freshHistory)).toEqual([v2Id]);
      expect(identitiesOf(freshHistory)).toEqual(['v2-worker']);
      expect([...charges].filter(([key]) => !before.has(key)).map(([, count]) => count)).toEqual([1, 1, 1, 1, 1]);
      console.log(
        `cluster deploy: 4 turns waiting on v1 when v2 was promoted finished on v1 (4 charges, each once); the new turn ran on v2; v1 drained`,
      );
    } finally {
      for (const entry of workers) entry.worker.shutdown();
      await Promise.all(workers.map((entry) => entry.done.catch(() => undefined)));
      await tollgate.close();
    }
  }, 600_000);
});

describe.skipIf(!enabled)('a real cluster losing a part while turns wait for approval and approved charges run', () => {
  it(
    'a history host SIGKILLed: every waiting turn takes its approval after, no charge runs twice',
    () => chargeThrough('history-kill', killed('history-1')),
    600_000,
  );

  it('the frontend SIGKILLed and started again: the same', () => chargeThrough('frontend-kill', killed('frontend')), 600_000);

  it('PostgreSQL stopped and started again: the same', () => chargeThrough('postgres-restart', postgresRestart()), 600_000);

  it('a history host SIGKILLed and kept down: its shards move to the other host, which completes every turn, each charge once', async () => {
    const fault = shardsMoved();
    await chargeThrough('shards-moved', fault);
    console.log(`cluster shards-moved: shards held by each history host: ${fault.seen.join('; ')}`);
  }, 600_000);
});
