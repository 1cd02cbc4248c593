// A deploy on the dev server: build v1 serves turns that wait for approval and a running
// conversation; build v2, whose turn runs an activity before anything else (so before its
// approval wait), is started and made current. The waiting v1 turns finish on v1 when approved,
// new turns and the conversation's next run go to v2, and v1 is drained only when its last turn closed.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConfiguredStore } from '../../intents/open-store';
import type { IdempotencyStore } from '../../intents/intent-store';
import { deploymentStatus, promoteBuild } from '../../client/deployments';
import { TollgateClient } from '../../client/tollgate-client';
import type { AgentTurnResult, TurnState } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { approvalSignal, historyQuery, sendUpdate, stateQuery } from '../../workflows/messages';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { buildIdOfBundle } from '../../worker/deployment';
import { bundleWorkflows, startDevServerEnvironment } from '../../testing/servers';
import { testConfig } from '../helpers/test-config';
import { until } from '../helpers/until';
import { build, buildsOf, events as readEvents, firstActivityOf, identitiesOf } from '../helpers/deploy-histories';

const DEPLOYMENT = 'deploy-test';
const TASK_QUEUE = 'deploy-test-queue';

let env: TestWorkflowEnvironment;
let config: TollgateConfig;
let store: IdempotencyStore;
let v1Bundle: WorkflowBundleWithSourceMap;
let v2Bundle: WorkflowBundleWithSourceMap;
const running: Array<{ worker: TollgateWorker; done: Promise<void> }> = [];

/** Starts a worker of one build (`identity` names it in the history's activity events). */
async function startWorker(bundle: WorkflowBundleWithSourceMap, identity: string, makeCurrent: 'on-start' | 'manual') {
  const workerConfig = { ...config, temporal: { ...config.temporal, deployment: { ...config.temporal.deployment, makeCurrent } } };
  const worker = await createWorker({
    config: workerConfig,
    connection: env.nativeConnection,
    store,
    workflowBundle: bundle,
    workerOptions: { identity },
  });
  const entry = { worker, done: worker.run() };
  running.push(entry);
  return entry;
}

async function stopWorker(entry: { worker: TollgateWorker; done: Promise<void> }): Promise<void> {
  entry.worker.shutdown();
  await entry.done;
  running.splice(running.indexOf(entry), 1);
}

const turnInput = (taskId: string) => ({ taskId, prompt: 'Summarize the refund policy and send it to the requester' });

/** Waits until the turn's send waits for approval, and returns the pending entry. */
async function waitingApproval(workflowId: string) {
  return until(`${workflowId} to wait for approval`, async () => {
    const state: TurnState = await env.client.workflow.getHandle(workflowId).query(stateQuery);
    return state.pendingApprovals[0];
  });
}

const events = (workflowId: string, runId?: string) => readEvents(env.client, workflowId, runId);

const outboxMessages = () =>
  readdirSync(path.join(config.workspace, 'outbox'), { recursive: true }).filter((name) => String(name).endsWith('.json')).length;

function sendAttempts(result: AgentTurnResult): number[] {
  return result.toolCalls.filter((call) => call.tool === 'send_message').map((call) => call.executions);
}

beforeAll(async () => {
  env = await startDevServerEnvironment();
  const base = testConfig();
  config = {
    ...base,
    temporal: { ...base.temporal, taskQueue: TASK_QUEUE, deployment: { ...base.temporal.deployment, name: DEPLOYMENT } },
  };
  store = openConfiguredStore(config);
  v1Bundle = await bundleWorkflows();
  v2Bundle = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '..', 'fixtures', 'deploy-v2-workflows.ts'),
    logger: new DefaultLogger('WARN'),
  });
});

afterAll(async () => {
  for (const entry of [...running]) await stopWorker(entry).catch(() => undefined);
  await store?.close();
  await env?.teardown();
});

describe('a deploy by worker versioning on the dev server', () => {
  it('keeps each turn on the build that started it, moves new work and the conversation to the new build, and drains the old one last', async () => {
    const v1Id = buildIdOfBundle(v1Bundle.code);
    const v2Id = buildIdOfBundle(v2Bundle.code);
    expect(v1Id).not.toBe(v2Id);
    const client = new TollgateClient(env.client, config);
    const status = () => deploymentStatus(env.client, DEPLOYMENT);

    // Build v1 serves two turns that wait for approval and a conversation with one turn done.
    const v1 = await startWorker(v1Bundle, 'v1-worker', 'on-start');
    expect(v1.worker.deploymentVersion).toEqual({ deploymentName: DEPLOYMENT, buildId: v1Id });
    expect(await v1.worker.madeCurrent).toEqual({ made: 'current' });
    const turnA = (await client.startTurn(turnInput('deploy-a'), { workflowId: 'deploy-turn-a' })).workflowId;
    const turnB = (await client.startTurn(turnInput('deploy-b'), { workflowId: 'deploy-turn-b' })).workflowId;
    const pendingA = await waitingApproval(turnA);
    const pendingB = await waitingApproval(turnB);
    const conversationId = 'deploy-conversation';
    const conversation = await env.client.workflow.start('conversation', {
      workflowId: conversationId,
      taskQueue: TASK_QUEUE,
      args: [{ conversationId, model: { provider: 'scripted', script: [{ text: 'noted' }] } }],
    });
    const firstRun = conversation.firstExecutionRunId;
    await conversation.executeUpdate(sendUpdate, { args: [{ text: 'first message' }] });

    // Build v2 starts without taking work, then is made current as `tollgate deploy promote` does.
    const v2 = await startWorker(v2Bundle, 'v2-worker', 'manual');
    expect(await v2.worker.madeCurrent).toMatchObject({ made: 'not_asked' });
    expect(await until('v2 to be listed', async () => (await status()).builds.find((entry) => entry.buildId === v2Id))).toMatchObject({
      state: 'inactive',
    });
    expect(await build(status(), v1Id)).toMatchObject({ state: 'current', safeToStop: false });
    const promotion = await promoteBuild(env.client, { deploymentName: DEPLOYMENT, buildId: v2Id });
    expect(promotion).toMatchObject({ previous: v1Id });
    expect(promotion.temporalCommand).toContain(
      `set-current-version --namespace default --deployment-name ${DEPLOYMENT} --build-id ${v2Id}`,
    );

    const afterPromotion = await build(status(), v1Id);
    expect(afterPromotion).toMatchObject({ state: 'draining', openTurns: 2, openConversations: 1, waitingForPerson: 2, safeToStop: false });
    const [oldest] = [
      { workflowId: turnA, since: pendingA.requestedAt },
      { workflowId: turnB, since: pendingB.requestedAt },
    ].sort((a, b) => Date.parse(a.since) - Date.parse(b.since) || (a.workflowId < b.workflowId ? -1 : 1));
    expect(afterPromotion.oldestWait).toEqual({ kind: 'approval', ...oldest });
    expect(await build(status(), v2Id)).toMatchObject({ state: 'current', openTurns: 0 });

    // A new turn runs on v2: its first activity is v2's, and a v2 worker runs its activities.
    const turnD = (await client.startTurn(turnInput('deploy-d'), { workflowId: 'deploy-turn-d' })).workflowId;
    const pendingD = await waitingApproval(turnD);
    expect(firstActivityOf(await events(turnD))).toBe('turnSettings');

    // The waiting v1 turn, approved now, finishes on v1: every task and activity on v1, the send run once.
    await client.approve(turnA, pendingA.callId, { approver: 'maria', argsDigest: pendingA.argsDigest });
    const resultA: AgentTurnResult = await env.client.workflow.getHandle(turnA).result();
    expect(resultA.status).toBe('completed');
    expect(sendAttempts(resultA)).toEqual([1]);
    const historyA = await events(turnA);
    expect(buildsOf(historyA)).toEqual([v1Id]);
    expect(identitiesOf(historyA)).toEqual(['v1-worker']);
    expect(firstActivityOf(historyA)).not.toBe('turnSettings');
    // What pinning spares it: on v2's code, the same history fails replay.
    await expect(Worker.runReplayHistory({ workflowBundle: v2Bundle }, { events: historyA } as never, turnA)).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
    await expect(Worker.runReplayHistory({ workflowBundle: v1Bundle }, { events: historyA } as never, turnA)).resolves.toBeUndefined();

    // v1 stops before it drained: its waiting turn, approved meanwhile, is neither failed nor run on v2.
    await stopWorker(v1);
    await env.client.workflow
      .getHandle(turnB)
      .signal(approvalSignal, { callId: pendingB.callId, decision: 'approve', approver: 'maria', argsDigest: pendingB.argsDigest });
    // Long enough for a task the server could route to v2 to be taken there (it dispatches within a second).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect((await env.client.workflow.getHandle(turnB).describe()).status.name).toBe('RUNNING');
    const historyWhileDown = await events(turnB);
    expect(buildsOf(historyWhileDown)).toEqual([v1Id]);
    expect(identitiesOf(historyWhileDown)).toEqual(['v1-worker']);
    expect(outboxMessages()).toBe(1);
    expect(await build(status(), v1Id)).toMatchObject({ state: 'draining', openTurns: 1, safeToStop: false });

    // A v1 worker returns, and the turn finishes on it, its send run once.
    await startWorker(v1Bundle, 'v1-worker-again', 'manual');
    const resultB: AgentTurnResult = await env.client.workflow.getHandle(turnB).result();
    expect(resultB.status).toBe('completed');
    expect(sendAttempts(resultB)).toEqual([1]);
    expect(buildsOf(await events(turnB))).toEqual([v1Id]);
    expect(identitiesOf(await events(turnB))).toEqual(['v1-worker', 'v1-worker-again']);

    // The conversation's next send still runs on v1 (its run is pinned); then it continues as new, on v2.
    await conversation.executeUpdate(sendUpdate, { args: [{ text: 'second message' }] });
    const secondRun = await until('the conversation to continue as new', async () => {
      const runId = (await env.client.workflow.getHandle(conversationId).describe()).runId;
      return runId !== firstRun ? runId : undefined;
    });
    expect(buildsOf(await events(conversationId, firstRun))).toEqual([v1Id]);
    await conversation.executeUpdate(sendUpdate, { args: [{ text: 'third message' }] });
    const secondRunInfo = (await env.client.workflow.getHandle(conversationId, secondRun).describe()).raw.workflowExecutionInfo;
    expect(secondRunInfo?.versioningInfo?.deploymentVersion?.buildId).toBe(v2Id);
    expect(buildsOf(await events(conversationId, secondRun))).toEqual([v2Id]);
    expect(buildsOf(await events(`${conversationId}-turn-2`))).toEqual([v1Id]);
    expect(buildsOf(await events(`${conversationId}-turn-3`))).toEqual([v2Id]);
    expect(firstActivityOf(await events(`${conversationId}-turn-3`))).toBe('turnSettings');
    const history = await env.client.workflow.getHandle(conversationId).query(historyQuery);
    expect(history.turns).toBe(3);

    // Nothing runs on v1 any more: drained, safe to stop. v2 serves the open turn and the conversation.
    expect(await build(status(), v1Id)).toMatchObject({ state: 'drained', openTurns: 0, openConversations: 0, safeToStop: true });
    expect(await build(status(), v2Id)).toMatchObject({ state: 'current', openTurns: 1, openConversations: 1, safeToStop: false });

    await client.approve(turnD, pendingD.callId, { approver: 'maria', argsDigest: pendingD.argsDigest });
    const resultD: AgentTurnResult = await env.client.workflow.getHandle(turnD).result();
    expect(sendAttempts(resultD)).toEqual([1]);
    expect(identitiesOf(await events(turnD))).toEqual(['v2-worker']);
    expect(outboxMessages()).toBe(3);
  });
});
