import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import type { AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { freePort } from '../../connection/ports';
import { createWorker } from '../../worker/create-worker';
import { RECORDED_HISTORY, RECORDED_PROVIDER_HISTORY } from '../helpers/histories';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { temporalCli } from '../helpers/temporal-cli';
import { startLoopbackModelServer } from '../../client/demo/loopback-model-server';
import { testConfig } from '../helpers/test-config';
import { waitForState } from '../helpers/turn-runner';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-'));
let server: DevServer;
let config: TollgateConfig;
let serverOptions: Parameters<typeof startDevServer>[0];

beforeAll(async () => {
  quietRuntime();
  const port = await freePort();
  serverOptions = {
    address: `127.0.0.1:${port}`,
    namespace: 'default',
    dbFile: path.join(folder, 'temporal.db'),
    logFile: path.join(folder, 'server.log'),
  };
  server = await startDevServer(serverOptions);
  config = testConfig({ temporal: { address: server.address } });
});

afterAll(async () => {
  await server?.stop();
});

describe('a turn end to end on the dev server', () => {
  it('runs through a real worker and client, waits in the approvals inbox, shows in the CLI, replays, and survives a server restart', async () => {
    const workflowBundle = await bundleWorkflows();
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, workflowBundle });
    const client = await TollgateClient.connect(config);
    const taskId = `e2e-${Date.now()}`;

    const { handle, result, inbox } = await worker.runUntil(async () => {
      const started = await client.startTurn({ taskId, prompt: 'Who must approve a refund above 2,000 EUR?' });
      const waiting = await waitForState(
        client.client.workflow.getHandle(started.workflowId),
        (state) => state.pendingApprovals.length > 0,
      );
      // The approvals inbox is a visibility query on the search attribute.
      let listedWaiting: Array<{ execution: { workflowId: string } }> = [];
      for (let tries = 0; tries < 50 && listedWaiting.length === 0; tries++) {
        listedWaiting = await temporalCli(server.address, [
          'workflow',
          'list',
          '--query',
          `TollgateAwaitingApproval = true AND TollgateTaskId = "${taskId}"`,
        ]);
        if (listedWaiting.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const pending = waiting.pendingApprovals[0];
      await client.approve(started.workflowId, pending.callId, { approver: 'e2e', argsDigest: pending.argsDigest });
      return { handle: started, result: (await client.result(started.workflowId)) as AgentTurnResult, inbox: listedWaiting };
    });
    expect(inbox.map((entry) => entry.execution.workflowId)).toEqual([handle.workflowId]);
    expect(result.status).toBe('completed');
    expect(result.answer).toContain('finance lead');
    expect(result.toolCalls.map((event) => `${event.tool}:${event.status}:${event.executions}`)).toEqual([
      'search_local_sources:success:1',
      'get_document:success:1',
      'get_document:success:1',
      'save_draft:success:1',
      'send_message:success:1',
    ]);
    expect(
      readdirSync(path.join(config.workspace, 'outbox'), { recursive: true }).filter((name) => String(name).endsWith('.json')),
    ).toHaveLength(1);

    // The Temporal CLI sees the turn's activities in its history.
    const shown = await temporalCli<{
      events: Array<{
        eventType: string;
        activityTaskScheduledEventAttributes?: { activityType: { name: string } };
        markerRecordedEventAttributes?: { markerName: string; details?: Record<string, { payloads?: Array<{ data?: string }> }> };
      }>;
    }>(server.address, ['workflow', 'show', '--workflow-id', handle.workflowId]);
    const scheduled = shown.events.flatMap((event) =>
      event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' ? [event.activityTaskScheduledEventAttributes!.activityType.name] : [],
    );
    expect(scheduled).toEqual([
      'modelStep',
      'runTool',
      'modelStep',
      'runTool',
      'runTool',
      'modelStep',
      'runTool',
      'modelStep',
      'runTool',
      'modelStep',
    ]);
    expect(shown.events.filter((event) => event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED')).toHaveLength(10);
    // The turn read its settings from the worker's config, the status lookup before save_draft ran, the
    // store was asked whether the send repeats a call already applied, and the approval rules were asked
    // about the send before a person was, as local activities: one marker each.
    const localActivities = shown.events.flatMap((event) => {
      const marker = event.markerRecordedEventAttributes;
      if (event.eventType !== 'EVENT_TYPE_MARKER_RECORDED' || marker?.markerName !== 'core_local_activity') return [];
      const data = marker.details?.data?.payloads?.[0]?.data;
      return data ? [(JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { activity_type: string }).activity_type] : [];
    });
    expect(localActivities).toEqual(['turnSettings', 'lookupStatus', 'lookupStatus', 'decideByPolicy']);

    // The approvals inbox and task look-ups rest on the search attribute.
    const listed = await temporalCli<Array<{ execution: { workflowId: string } }>>(server.address, [
      'workflow',
      'list',
      '--query',
      `TollgateTaskId="${taskId}"`,
    ]);
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

  it('follows a turn live through the openai-compatible provider: streamed text arrives in parts, with no history event per token', async () => {
    const loopback = await startLoopbackModelServer({ delayMs: 40 });
    const liveConfig = {
      ...config,
      model: {
        ...config.model,
        models: {
          ...config.model.models,
          loopback: { provider: 'openai-compatible' as const, model: 'scripted', baseURL: loopback.baseURL },
        },
      },
    };
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config: liveConfig, connection, workflowBundle: await bundleWorkflows() });
    const client = await TollgateClient.connect(liveConfig);
    const seen: string[] = [];
    const phases = new Set<string>();
    try {
      const { started, result } = await worker.runUntil(async () => {
        const turn = await client.startTurn({
          taskId: `live-${Date.now()}`,
          prompt: 'How long are backups kept?',
          model: 'loopback',
          tools: ['search_local_sources', 'get_document'],
        });
        const followed = await client.follow(
          turn.workflowId,
          ({ state, modelText }) => {
            phases.add(state.phase);
            if (modelText) seen.push(modelText);
          },
          { intervalMs: 100 },
        );
        return { started: turn, result: followed };
      });
      expect(result.status).toBe('completed');
      expect(result.answer).toContain('kept for 35 days');
      // Partial text was visible before the step ended: some view held a strict prefix of the answer.
      expect(seen.some((text) => text.length < result.answer!.length && result.answer!.startsWith(text))).toBe(true);
      expect(phases.has('model')).toBe(true);
      const history = await client.client.workflow.getHandle(started.workflowId).fetchHistory();
      if (process.env.TOLLGATE_RECORD_HISTORIES === '1') {
        writeFileSync(
          RECORDED_PROVIDER_HISTORY,
          `${JSON.stringify(await temporalCli(server.address, ['workflow', 'show', '--workflow-id', started.workflowId]), null, 2)}\n`,
        );
      }
      // No event per token: while the last model step streamed its answer word by word, the history
      // took only that activity's own started event (its scheduled and completed events bracket it).
      const events = history.events!;
      const steps = events.flatMap((event, index) =>
        event.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep' ? [index] : [],
      );
      const lastStep = steps.at(-1)!;
      const scheduledId = Number(events[lastStep].eventId);
      const completed = events.findIndex(
        (event) => Number(event.activityTaskCompletedEventAttributes?.scheduledEventId ?? -1) === scheduledId,
      );
      expect(completed).toBeGreaterThan(lastStep);
      expect(loopback.chunksSent).toBeGreaterThanOrEqual(result.answer!.split(/\s+/).length);
      expect(result.answer!.split(/\s+/).length).toBeGreaterThan(20);
      expect(completed - lastStep - 1).toBeLessThanOrEqual(1);
      expect(events.length).toBeLessThan(60);
    } finally {
      await client.close();
      await connection.close();
      await loopback.close();
    }
  });
});
