import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../client/tollgate-client';
import type { AgentTurnResult } from '../common/types';
import type { TollgateConfig } from '../config/config-schema';
import { freePort, startDevServer, type DevServer } from '../server/dev-server';
import { createWorker } from '../worker/create-worker';
import { RECORDED_HISTORY } from './helpers/histories';
import { bundleWorkflows, quietRuntime } from './helpers/servers';
import { temporalCli } from './helpers/temporal-cli';
import { testConfig } from './helpers/test-config';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-'));
let server: DevServer;
let config: TollgateConfig;
let serverOptions: Parameters<typeof startDevServer>[0];

beforeAll(async () => {
  quietRuntime();
  const port = await freePort();
  serverOptions = { address: `127.0.0.1:${port}`, namespace: 'default', dbFile: path.join(folder, 'temporal.db'), logFile: path.join(folder, 'server.log') };
  server = await startDevServer(serverOptions);
  config = testConfig({ temporal: { address: server.address } });
});

afterAll(async () => {
  await server?.stop();
});

describe('a turn end to end on the dev server', () => {
  it('runs through a real worker and client, shows in the CLI, replays, and survives a server restart', async () => {
    const workflowBundle = await bundleWorkflows();
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, workflowBundle });
    const client = await TollgateClient.connect(config);
    const taskId = `e2e-${Date.now()}`;

    const { handle, result } = await worker.runUntil(async () => {
      const started = await client.startTurn({ taskId, prompt: 'Who must approve a refund above 2,000 EUR?' });
      return { handle: started, result: (await client.result(started.workflowId)) as AgentTurnResult };
    });
    expect(result.status).toBe('completed');
    expect(result.answer).toContain('finance lead');
    expect(result.toolCalls.map((event) => `${event.tool}:${event.status}`)).toEqual(['search_local_sources:success', 'get_document:success', 'get_document:success']);

    // The Temporal CLI sees the turn's activities in its history.
    const shown = await temporalCli<{ events: Array<{ eventType: string; activityTaskScheduledEventAttributes?: { activityType: { name: string } } }> }>(server.address, [
      'workflow',
      'show',
      '--workflow-id',
      handle.workflowId,
    ]);
    const scheduled = shown.events.flatMap((event) => (event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' ? [event.activityTaskScheduledEventAttributes!.activityType.name] : []));
    expect(scheduled).toEqual(['modelStep', 'runTool', 'modelStep', 'runTool', 'runTool', 'modelStep']);
    expect(shown.events.filter((event) => event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED')).toHaveLength(6);

    // The approvals inbox and task look-ups rest on the search attribute.
    const listed = await temporalCli<Array<{ execution: { workflowId: string } }>>(server.address, ['workflow', 'list', '--query', `TollgateTaskId="${taskId}"`]);
    expect(listed.map((entry) => entry.execution.workflowId)).toEqual([handle.workflowId]);

    // The history replays on the current workflow code.
    const history = await client.client.workflow.getHandle(handle.workflowId).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle }, history, handle.workflowId);
    if (process.env.TOLLGATE_RECORD_HISTORIES === '1') {
      mkdirSync(path.dirname(RECORDED_HISTORY), { recursive: true });
      writeFileSync(RECORDED_HISTORY, `${JSON.stringify(shown, null, 2)}\n`);
    }
    await client.close();
    await connection.close();

    // The SQLite file keeps the turn across a restart of the server.
    await server.stop();
    server = await startDevServer(serverOptions);
    const afterRestart = await TollgateClient.connect(config);
    expect((await afterRestart.result(handle.workflowId)).answer).toBe(result.answer);
    // A query replays the finished turn on a worker.
    const secondConnection = await NativeConnection.connect({ address: server.address });
    const secondWorker = await createWorker({ config, connection: secondConnection, workflowBundle });
    const state = await secondWorker.runUntil(afterRestart.state(handle.workflowId));
    expect(state).toMatchObject({ taskId, status: 'completed', toolCalls: result.toolCalls });
    await afterRestart.close();
    await secondConnection.close();
  });
});
