import { openSqliteStore } from '../intents/sqlite-store';
import type { TollgateWorker } from '../worker/create-worker';
// The dev server, worker and clients the in-process benchmark sections share.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../activities';
import { TollgateClient } from '../client/tollgate-client';
import type { AgentTurnResult, ScriptStep, TurnState } from '../common/contract/turn';
import type { TollgateConfig } from '../config/config-schema';
import { parseConfig, PROJECT_ROOT } from '../config/load-config';
import { startDevServer, type DevServer } from '../server/dev-server';
import { freePort } from '../connection/ports';
import { createWorker } from '../worker/create-worker';
import { approvalSignal, stateQuery } from '../workflows/messages';
import { bareActivities, benchHandlers, benchTools, type BenchHandlers } from './bench-tools';
import { sleep } from './lib';

export const BENCH_WORKFLOWS_PATH = path.join(__dirname, 'bench-workflows.ts');

/** What a section gets: a running dev server, one worker serving both variants, and clients. */
export interface BenchContext {
  server: DevServer;
  folder: string;
  config: TollgateConfig;
  taskQueue: string;
  handlers: BenchHandlers;
  workflowBundle: WorkflowBundleWithSourceMap;
  tollgate: TollgateClient;
  client: Client;
  worker: TollgateWorker;
  /** Runs one scripted Tollgate turn to its end; `approveAtOnce` approves every pending call as soon as it shows. */
  runTurn(workflowId: string, script: ScriptStep[], options?: { approveAtOnce?: boolean }): Promise<AgentTurnResult>;
  /** Starts a bare workflow and waits for its result. */
  runBare<T>(workflowType: string, workflowId: string, args: unknown[]): Promise<T>;
}

export function benchConfig(folder: string, address: string, taskQueue: string): TollgateConfig {
  return parseConfig(
    {
      temporal: { address, taskQueue },
      workspace: path.join(folder, 'workspace'),
      store: { sqliteFile: path.join(folder, 'intents.db') },
      corpus: path.join(PROJECT_ROOT, 'examples', 'corpus'),
    },
    { source: 'bench', baseDir: PROJECT_ROOT, env: {} },
  );
}

export function quietRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Installed already in this process.
  }
}

export function bundleBenchWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath: BENCH_WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
}

/** Approves every call of one turn as soon as the state query shows it waiting, until `done` resolves. */
export async function approveAtOnce(handle: WorkflowHandle, done: Promise<unknown>, pollMs = 5): Promise<void> {
  let finished = false;
  void done.finally(() => {
    finished = true;
  });
  const sent = new Set<string>();
  while (!finished) {
    let state: TurnState;
    try {
      state = await handle.query(stateQuery);
    } catch (error) {
      if (finished) return;
      throw error;
    }
    for (const pending of state.pendingApprovals) {
      if (sent.has(pending.callId)) continue;
      sent.add(pending.callId);
      await handle.signal(approvalSignal, {
        callId: pending.callId,
        decision: 'approve',
        argsDigest: pending.argsDigest,
        approver: 'bench',
      });
    }
    await sleep(pollMs);
  }
}

/**
 * Where the bench's dev server keeps its state (BENCH_SERVER_DB): `memory` by default, as
 * `temporal server start-dev` does on its own; `file`, the SQLite file Tollgate's embedded server
 * uses, syncs every commit to disk and so doubles the server's cost per turn on this machine. Every
 * comparison runs its variants on the same server either way.
 */
export function benchServerDb(): 'memory' | 'file' {
  const raw = process.env.BENCH_SERVER_DB;
  if (raw === undefined || raw === '' || raw === 'memory') return 'memory';
  if (raw === 'file') return 'file';
  throw new Error(`BENCH_SERVER_DB must be memory or file, got "${raw}"`);
}

/** Starts the dev server and the worker, runs `body`, and stops what it started whatever happens. */
export async function withBenchContext<T>(body: (context: BenchContext) => Promise<T>): Promise<T> {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-'));
  const server: DevServer = await startDevServer({
    address: `127.0.0.1:${await freePort()}`,
    namespace: 'default',
    dbFile: benchServerDb() === 'memory' ? undefined : path.join(folder, 'temporal.db'),
    logFile: path.join(folder, 'server.log'),
  });
  try {
    const taskQueue = 'bench';
    const config = benchConfig(folder, server.address, taskQueue);
    const handlers = benchHandlers();
    const workflowBundle = await bundleBenchWorkflows();
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({
      config,
      connection,
      workflowBundle,
      activities: {
        ...createActivities({ config, tools: benchTools(handlers), store: openSqliteStore(config.store.sqliteFile) }),
        ...bareActivities(handlers),
      } as ReturnType<typeof createActivities>,
    });
    const tollgate = await TollgateClient.connect(config);
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    const context: BenchContext = {
      server,
      folder,
      config,
      taskQueue,
      handlers,
      workflowBundle,
      tollgate,
      client,
      worker,
      async runTurn(workflowId, script, { approveAtOnce: approving = false } = {}) {
        const toolCalls = script.reduce((sum, step) => sum + ('toolCalls' in step ? step.toolCalls.length : 0), 0);
        await tollgate.startTurn(
          {
            taskId: workflowId,
            prompt: 'bench',
            model: { provider: 'scripted', script },
            limits: { maxSteps: script.length, maxToolCalls: toolCalls },
          },
          { workflowId },
        );
        const result = tollgate.result(workflowId);
        if (approving) await approveAtOnce(client.workflow.getHandle(workflowId), result);
        return result;
      },
      async runBare<T>(workflowType: string, workflowId: string, args: unknown[]) {
        return (await client.workflow.execute(workflowType, { taskQueue, workflowId, args })) as T;
      },
    };
    try {
      return await worker.runUntil(body(context));
    } finally {
      await tollgate.close();
      await client.connection.close();
      await connection.close();
    }
  } finally {
    await server.stop();
    rmSync(folder, { recursive: true, force: true });
  }
}
