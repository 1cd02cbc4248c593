import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import type { AgentTurnResult } from '../../common/contract/turn';
import { PROJECT_ROOT } from '../../config/load-config';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { freePort } from '../../connection/ports';
import { approvalSignal, resumeSignal, stateQuery } from '../../workflows/messages';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { scripted } from '../helpers/turn-runner';
import { killWorker, workerLine } from '../helpers/worker-processes';
import { taskFolderName } from '../../tools/built-in/workspace-path';
import { argsDigest } from '../../tools/canonical-json';

const TURNS = 8;
/**
 * A worker killed while it held a workflow task leaves the task to time out before another worker
 * takes it: 3 s rather than Temporal's default 10 s, so the test does not wait 10 s after most kills.
 */
const FAULT_WORKFLOW_TASK_TIMEOUT = '3s';
const KILLS = 30;
const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-kill-'));
let server: DevServer;
const lines: Array<ReturnType<typeof workerLine>> = [];

beforeAll(async () => {
  quietRuntime();
  server = await startDevServer({
    address: `127.0.0.1:${await freePort()}`,
    namespace: 'default',
    dbFile: path.join(folder, 'temporal.db'),
    logFile: path.join(folder, 'server.log'),
  });
});

afterAll(async () => {
  await Promise.all(lines.map((line) => line.stop()));
  await server?.stop();
});

/** The test database prepared by `node scripts/setup.mjs --system`, or TOLLGATE_TEST_POSTGRES_URL. */
function postgresUrl(): string {
  return (
    process.env.TOLLGATE_TEST_POSTGRES_URL ??
    readFileSync(path.join(PROJECT_ROOT, '.tollgate', 'state', 'postgres-test-url'), 'utf8').trim()
  );
}

async function killScenario({ name, workers: workerCount, postgres }: { name: string; workers: number; postgres: boolean }) {
  const taskQueue = `${name}-${Date.now()}`;
  // Task ids unique to this run: a shared PostgreSQL store keeps the intents of earlier runs, and
  // the same intent of the same task is (rightly) answered from its first receipt.
  const taskPrefix = `${name}-${Date.now().toString(36)}`;
  const workspace = path.join(folder, name, 'workspace');
  mkdirSync(workspace, { recursive: true });
  const bundleFile = path.join(folder, name, 'workflows.js');
  writeFileSync(bundleFile, (await bundleWorkflows()).code);
  const settings = {
    address: server.address,
    taskQueue,
    workspace,
    sqliteFile: path.join(folder, name, 'idempotency.db'),
    postgresUrl: postgres ? postgresUrl() : undefined,
    bundleFile,
    writeLog: path.join(folder, name, 'draft-writes.log'),
  };
  const client = await TollgateClient.connect(testConfig({ temporal: { address: server.address, taskQueue } }));
  // Each replacement stands by before its predecessor is killed (test/helpers/worker-processes.ts).
  const line = workerLine('fault-worker', settings);
  lines.push(line);
  const workers: ChildProcess[] = [];

  const handles = [];
  // What the person is shown of each turn's message, by workflow id: its arguments' digest.
  const digests = new Map<string, string>();
  for (let turn = 0; turn < TURNS; turn++) {
    const script = [
      { toolCalls: [{ tool: 'save_draft', args: { path: `turn-${turn}/a.md`, content: `first draft of turn ${turn}\n` } }] },
      { toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: `turn ${turn}`, body: `the brief of turn ${turn}` } }] },
      { toolCalls: [{ tool: 'save_draft', args: { path: `turn-${turn}/b.md`, content: `second draft of turn ${turn}\n` } }] },
      { text: `turn ${turn} done` },
    ];
    const handle = await client.startTurn(
      {
        taskId: `${taskPrefix}-${turn}`,
        prompt: `turn ${turn}`,
        model: scripted(script),
        limits: { errorBudget: 10, maxSteps: 20 },
      },
      { workflowTaskTimeout: FAULT_WORKFLOW_TASK_TIMEOUT },
    );
    digests.set(handle.workflowId, argsDigest(script[1].toolCalls![0].args));
    handles.push(handle);
  }

  // A person approves each send as soon as it waits; signals need no worker, so they land even while none runs.
  let approving = true;
  const approver = (async () => {
    while (approving) {
      for await (const execution of client.client.workflow.list({
        query: `TollgateAwaitingApproval = true AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'`,
      })) {
        // The person approves the message they were shown, naming the digest they checked, for the
        // wait the turn shows (its call id and round); a turn listed as waiting may have ended since.
        const handle = client.client.workflow.getHandle(execution.workflowId);
        const state = await handle.query(stateQuery).catch(() => undefined);
        for (const pending of state?.pendingApprovals ?? []) {
          await handle
            .signal(approvalSignal, {
              callId: pending.callId,
              decision: 'approve',
              approver: 'fault-test',
              argsDigest: digests.get(execution.workflowId),
              ...(pending.round > 1 ? { round: pending.round } : {}),
            })
            .catch((error: unknown) => {
              if (!(error instanceof WorkflowNotFoundError)) throw error;
            });
        }
      }
      // A worker killed while its model step streamed leaves the turn waiting for a resume decision
      // (its next attempt does not replay the step); the person asks the model again, for the wait shown.
      for await (const execution of client.client.workflow.list({
        query: `TollgateWaitingFor = 'resume' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'`,
      })) {
        const handle = client.client.workflow.getHandle(execution.workflowId);
        const pending = (await handle.query(stateQuery).catch(() => undefined))?.pendingResume;
        if (!pending) continue;
        await handle
          .signal(resumeSignal, {
            step: pending.step,
            decision: 'retry',
            by: 'fault-test',
            ...(pending.round > 1 ? { round: pending.round } : {}),
          })
          .catch((error: unknown) => {
            if (!(error instanceof WorkflowNotFoundError)) throw error;
          });
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();

  let kills = 0;
  const results = Promise.all(handles.map((handle) => client.result(handle.workflowId)));
  let done = false;
  void results.finally(() => (done = true));
  // Every round kills one worker at random and starts a new one in its place; the others go on.
  for (let index = 0; index < workerCount; index++) workers.push(await line.next());
  while (kills < KILLS) {
    await new Promise((resolve) => setTimeout(resolve, 150 + Math.floor(Math.random() * 1_200)));
    const victim = Math.floor(Math.random() * workers.length);
    await killWorker(workers[victim]);
    kills++;
    workers[victim] = await line.next();
  }
  const ended: AgentTurnResult[] = await results;
  approving = false;
  await approver;
  await line.stop();
  expect(done).toBe(true);

  expect(kills).toBeGreaterThanOrEqual(KILLS);
  expect(ended.map((result) => result.status)).toEqual(Array(TURNS).fill('completed'));
  // Messages lie in one folder per task: outbox/<task>/<key>.json.
  const outbox = existsSync(path.join(workspace, 'outbox'))
    ? readdirSync(path.join(workspace, 'outbox'), { recursive: true })
        .map(String)
        .filter((file) => file.endsWith('.json'))
    : [];
  for (const [turn, result] of ended.entries()) {
    const messages = outbox.filter((file) => path.basename(file).startsWith(`${taskPrefix}-${turn}.send_message.`));
    const send = result.toolCalls.find((event) => event.tool === 'send_message')!;
    // Completed once, or reported outcome_unknown — never twice.
    expect(messages.length).toBeLessThanOrEqual(1);
    if (send.status === 'success') expect(messages).toHaveLength(1);
    else expect(send.code).toBe('outcome_unknown');
    for (const draft of ['a', 'b']) {
      expect(
        readFileSync(path.join(workspace, 'drafts', taskFolderName(`${taskPrefix}-${turn}`), `turn-${turn}`, `${draft}.md`), 'utf8'),
      ).toContain(`draft of turn ${turn}`);
    }
  }
  const writes = readFileSync(settings.writeLog, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { key: string });
  const perIntent = new Map<string, number>();
  for (const { key } of writes) perIntent.set(key, (perIntent.get(key) ?? 0) + 1);
  expect([...perIntent.values()].filter((count) => count > 1)).toEqual([]);
  expect(perIntent.size).toBeLessThanOrEqual(TURNS * 2);
  console.log(
    `${name}: ${workerCount} worker(s), ${postgres ? 'PostgreSQL' : 'SQLite'} store, ${kills} kills, ${TURNS} turns completed, ${outbox.length} messages for ${ended.filter((result) => result.toolCalls.some((event) => event.tool === 'send_message' && event.status === 'success')).length} successful sends, ${writes.length} draft writes for ${perIntent.size} intents`,
  );
  await client.close();
}

// The two scenarios share the dev server and nothing else (their own task queue, workspace, store and workers): they run at once.
describe.concurrent('workers killed at random points', () => {
  it(
    `survives ${KILLS} SIGKILLs of the worker during turns that save drafts and send approved messages: no duplicate message, no duplicate draft write`,
    () => killScenario({ name: 'kill-one', workers: 1, postgres: false }),
    600_000,
  );

  it(
    `two workers on one task queue sharing the PostgreSQL store send each approved message exactly once under ${KILLS} kills`,
    () => killScenario({ name: 'kill-two', workers: 2, postgres: true }),
    600_000,
  );
});
