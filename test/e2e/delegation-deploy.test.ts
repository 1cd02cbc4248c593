// A deploy with a subagent waiting, on the dev server (worker versioning, as test/e2e/deploy.dev.test.ts):
// build v1 serves a tree whose child waits for approval; build v2 (whose turn runs an activity
// before anything else, so a v1 history would not replay on it) is started and made current. The
// tree stays on v1: the waiting child finishes on v1 once approved, and the child its v1 parent
// starts after the promotion runs on v1 too; a new tree started after the promotion runs on v2.
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploymentStatus, promoteBuild } from '../../client/deployments';
import { TollgateClient } from '../../client/tollgate-client';
import type { WaitBelow } from '../../common/contract/decisions';
import type { AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import type { IdempotencyStore } from '../../intents/intent-store';
import { openConfiguredStore } from '../../intents/open-store';
import { bundleWorkflows, startDevServerEnvironment } from '../../testing/servers';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { buildIdOfBundle } from '../../worker/deployment';
import { childWorkflowId } from '../../workflows/delegation/delegate-call';
import { stateQuery } from '../../workflows/messages';
import { build, buildsOf, events as readEvents, firstActivityOf, identitiesOf } from '../helpers/deploy-histories';
import { testConfig } from '../helpers/test-config';
import { executionsIn, leadModel, treeParts } from '../helpers/tree-parts';
import { until } from '../helpers/until';

const DEPLOYMENT = 'tree-deploy-test';

let env: TestWorkflowEnvironment;
let config: TollgateConfig;
let store: IdempotencyStore;
let executionLog: string;
let v1Bundle: WorkflowBundleWithSourceMap;
let v2Bundle: WorkflowBundleWithSourceMap;
const running: Array<{ worker: TollgateWorker; done: Promise<void> }> = [];

/** Starts a worker of one build serving the tree (`identity` names it in the history's activity events). */
async function startWorker(bundle: WorkflowBundleWithSourceMap, identity: string, makeCurrent: 'on-start' | 'manual') {
  const workerConfig = { ...config, temporal: { ...config.temporal, deployment: { ...config.temporal.deployment, makeCurrent } } };
  const worker = await createWorker({
    config: workerConfig,
    connection: env.nativeConnection,
    store,
    ...treeParts(executionLog),
    workflowBundle: bundle,
    workerOptions: { identity },
  });
  const entry = { worker, done: worker.run() };
  running.push(entry);
  return entry;
}

const events = (workflowId: string) => readEvents(env.client, workflowId);

beforeAll(async () => {
  env = await startDevServerEnvironment();
  const base = testConfig();
  config = {
    ...base,
    temporal: { ...base.temporal, taskQueue: 'tree-deploy-queue', deployment: { ...base.temporal.deployment, name: DEPLOYMENT } },
  };
  store = openConfiguredStore(config);
  executionLog = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-tree-deploy-')), 'executions.jsonl');
  v1Bundle = await bundleWorkflows();
  v2Bundle = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '..', 'fixtures', 'deploy-v2-workflows.ts'),
    logger: new DefaultLogger('WARN'),
  });
});

afterAll(async () => {
  for (const entry of running) {
    entry.worker.shutdown();
    await entry.done.catch(() => undefined);
  }
  await store?.close();
  await env?.teardown();
});

describe('a deploy with a subagent waiting', () => {
  it('keeps the tree on the build that started it, the waiting child and a child started after the promotion alike; new trees go to the new build', async () => {
    const v1Id = buildIdOfBundle(v1Bundle.code);
    const v2Id = buildIdOfBundle(v2Bundle.code);
    expect(v1Id).not.toBe(v2Id);
    const client = new TollgateClient(env.client, config);
    const start = (workflowId: string, subagents: Array<'refunds' | 'researcher'>) =>
      env.client.workflow.start('agentTurn', {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId: `task-${workflowId}`, prompt: 'Refund order o-1.', agent: 'lead', model: leadModel(...subagents) }],
      });

    // v1 serves a tree: the lead asks refunds (its refund waits for a person), then the researcher.
    const v1 = await startWorker(v1Bundle, 'v1-worker', 'on-start');
    expect(await v1.worker.madeCurrent).toEqual({ made: 'current' });
    const oldRoot = await start('tree-deploy-old', ['refunds', 'researcher']);
    const refundsChild = childWorkflowId(oldRoot.workflowId, 'call-0-0');
    const listed = await until('the root to list the child waiting', async () =>
      (await oldRoot.query(stateQuery)).waitsBelow?.find((wait: WaitBelow) => wait.kind === 'approval'),
    );
    expect(listed.workflowId).toBe(refundsChild);

    // v2 starts without taking work, then is made current.
    await startWorker(v2Bundle, 'v2-worker', 'manual');
    await until('v2 to be listed', async () =>
      (await deploymentStatus(env.client, DEPLOYMENT)).builds.find((entry) => entry.buildId === v2Id),
    );
    expect(await promoteBuild(env.client, { deploymentName: DEPLOYMENT, buildId: v2Id })).toMatchObject({ previous: v1Id });
    expect(await build(deploymentStatus(env.client, DEPLOYMENT), v1Id)).toMatchObject({ state: 'draining', safeToStop: false });

    // A tree started now runs on v2, its child too (v2's turn asks its settings as an activity first).
    const newRoot = await start('tree-deploy-new', ['researcher']);
    expect(((await newRoot.result()) as AgentTurnResult).status).toBe('completed');
    const newChild = childWorkflowId(newRoot.workflowId, 'call-0-0');
    for (const workflowId of [newRoot.workflowId, newChild]) {
      const history = await events(workflowId);
      expect(buildsOf(history)).toEqual([v2Id]);
      expect(identitiesOf(history)).toEqual(['v2-worker']);
      expect(firstActivityOf(history)).toBe('turnSettings');
    }

    // The waiting child, approved from the root's listing, finishes on v1; its parent then starts the
    // researcher's child, after the promotion, and that child runs on v1 too: the whole tree stays on its build.
    await client.approve(listed.workflowId, listed.callId!, { argsDigest: listed.argsDigest!, approver: 'maria', round: listed.round });
    const oldResult = (await oldRoot.result()) as AgentTurnResult;
    expect(oldResult.status).toBe('completed');
    const researcherChild = childWorkflowId(oldRoot.workflowId, 'call-1-0');
    expect(oldResult.toolCalls.map((event) => event.delegate)).toEqual([
      { agent: 'refunds', workflowId: refundsChild, status: 'completed' },
      { agent: 'researcher', workflowId: researcherChild, status: 'completed' },
    ]);
    for (const workflowId of [oldRoot.workflowId, refundsChild, researcherChild]) {
      const history = await events(workflowId);
      expect(buildsOf(history)).toEqual([v1Id]);
      expect(identitiesOf(history)).toEqual(['v1-worker']);
      expect(firstActivityOf(history)).not.toBe('turnSettings');
    }
    // What staying on v1 spares the waiting child: on v2's code its history fails replay.
    const childHistory = { events: await events(refundsChild) } as never;
    await expect(Worker.runReplayHistory({ workflowBundle: v2Bundle }, childHistory, refundsChild)).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
    await expect(Worker.runReplayHistory({ workflowBundle: v1Bundle }, childHistory, refundsChild)).resolves.toBeUndefined();
    // The refund ran once; the researchers' lookups once per tree.
    expect(executionsIn(executionLog, 'refund_order')).toHaveLength(1);
    expect(executionsIn(executionLog, 'lookup_order')).toHaveLength(2);
    await until('v1 to drain', async () => {
      const status = await build(deploymentStatus(env.client, DEPLOYMENT), v1Id);
      return status.openTurns === 0 ? status : undefined;
    });
  });
});
