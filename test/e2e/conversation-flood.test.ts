import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentTurnResult } from '../../common/contract/turn';
import { CONVERSATION_BOUNDS, MAX_SEND_TEXT_CHARS } from '../../common/defaults';
import { freePort } from '../../connection/ports';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { createWorker } from '../../worker/create-worker';
import { closeConversationSignal, historyQuery, sendUpdate } from '../../workflows/messages';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';

let server: DevServer;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-conversation-flood-'));
  [server, workflowBundle] = await Promise.all([
    freePort().then((port) =>
      startDevServer({
        address: `127.0.0.1:${port}`,
        namespace: 'default',
        dbFile: path.join(folder, 'temporal.db'),
        logFile: path.join(folder, 'server.log'),
      }),
    ),
    bundleWorkflows(),
  ]);
});

afterAll(async () => {
  await server?.stop();
});

describe('a conversation on the dev server (which enforces the 2 MB payload limit)', () => {
  it('answers 21 sends of 100,000 characters and one after them, each within a bounded wait, across continue-as-new', async () => {
    const taskQueue = `flood-${randomUUID()}`;
    const config = testConfig({ temporal: { address: server.address, taskQueue } });
    const workerConnection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection: workerConnection, workflowBundle });
    // Histories holding 2 MB of sends are larger than gRPC's 4 MB default message.
    const connection = await Connection.connect({
      address: server.address,
      channelArgs: { 'grpc.max_receive_message_length': 256 * 1024 * 1024 },
    });
    const client = new Client({ connection, namespace: 'default' });
    const conversationId = `conversation-${randomUUID()}`;
    try {
      await worker.runUntil(async () => {
        await client.workflow.start('conversation', {
          workflowId: conversationId,
          taskQueue,
          // Continue-as-new after every 7 turns: the 21st send meets the third run, which carries 14 sends' worth of history and more.
          args: [{ conversationId, maxTurnsPerRun: 7, model: { provider: 'scripted', script: [{ text: 'noted' }] } }],
        });
        const runIds = new Set<string>();
        for (let index = 0; index < 21; index++) {
          const handle = client.workflow.getHandle(conversationId);
          const text = `${index}:`.padEnd(MAX_SEND_TEXT_CHARS, 'x');
          // Generous, and about liveness: a stuck run never answers.
          const answered = await Promise.race([
            handle.executeUpdate(sendUpdate, { args: [{ text }] }) as Promise<AgentTurnResult>,
            new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`send ${index} got no answer in 120 s`)), 120_000)),
          ]);
          expect(answered.answer, `send ${index}`).toBe('noted');
          runIds.add((await handle.describe()).runId);
        }
        // The run after the 21st turn took the carried history and keeps answering.
        const handle = client.workflow.getHandle(conversationId);
        const after = await Promise.race([
          handle.executeUpdate(sendUpdate, { args: [{ text: 'still there?' }] }) as Promise<AgentTurnResult>,
          new Promise<never>((_, reject) =>
            setTimeout(() => reject(new Error('the send after the flood got no answer in 120 s')), 120_000),
          ),
        ]);
        expect(after.answer).toBe('noted');
        runIds.add((await handle.describe()).runId);
        expect(runIds.size).toBeGreaterThanOrEqual(4);
        const state = await handle.query(historyQuery);
        expect(state.turns).toBe(22);
        expect(state.omittedMessages).toBeGreaterThan(0);
        // Every continue-as-new the server took was within the bound.
        for (const runId of runIds) {
          const history = await client.workflow.getHandle(conversationId, runId).fetchHistory();
          for (const event of history.events ?? []) {
            const input = event.workflowExecutionContinuedAsNewEventAttributes?.input;
            if (!input) continue;
            const bytes = (input.payloads ?? []).reduce((sum, payload) => sum + (payload.data?.length ?? 0), 0);
            expect(bytes).toBeLessThanOrEqual(CONVERSATION_BOUNDS.inputBytes);
          }
        }
        await handle.signal(closeConversationSignal);
        expect(await handle.result()).toMatchObject({ closed: true, turns: 22 });
      });
    } finally {
      await connection.close();
      await workerConnection.close();
    }
  }, 900_000);
});
