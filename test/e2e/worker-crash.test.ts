import { openSqliteStore } from '../../intents/sqlite-store';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import { PROJECT_ROOT } from '../../config/load-config';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { freePort } from '../../connection/ports';
import { createActivities } from '../../activities';
import { createWorker } from '../../worker/create-worker';
import { openaiStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';

let server: DevServer;
let provider: FakeProvider;
let child: ChildProcess | undefined;

beforeAll(async () => {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-crash-'));
  const port = await freePort();
  [server, provider] = await Promise.all([
    startDevServer({
      address: `127.0.0.1:${port}`,
      namespace: 'default',
      dbFile: path.join(folder, 'temporal.db'),
      logFile: path.join(folder, 'server.log'),
    }),
    startFakeProvider(),
  ]);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await provider?.close();
  await server?.stop();
});

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a worker killed mid-stream', () => {
  it('leaves the chunks that went out in the heartbeat details; the next attempt does not replay the step, and the turn waits for a resume decision', async () => {
    const taskQueue = `crash-${Date.now()}`;
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']), stallAfter: 4 });
    const settings = { address: server.address, taskQueue, baseURL: provider.baseURL };
    child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(__dirname, '..', 'fixtures', 'model-worker.ts'), JSON.stringify(settings)],
      {
        cwd: PROJECT_ROOT,
        env: { ...process.env, OPENAI_API_KEY: 'sk-test-openai-key' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await until(
      () =>
        new Promise<true | undefined>((resolve) =>
          child!.stdout!.once('data', (line) => resolve(String(line).includes('worker ready') ? true : undefined)),
        ),
      'the worker process',
    );

    const base = testConfig({
      temporal: { address: server.address, taskQueue },
      model: { default: 'gpt', models: { gpt: { provider: 'openai', model: 'gpt-test', baseURL: provider.baseURL } } },
    });
    const client = await TollgateClient.connect(base);
    const { workflowId } = await client.startTurn({ taskId: 'crash-1', prompt: 'count to four', tools: [], limits: { errorBudget: 0 } });

    // Three chunks went out and were heartbeated; then the worker dies without a word.
    const progress = await until(async () => {
      const description = await client.client.workflow.getHandle(workflowId).describe();
      const payload = description.raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
      const details = payload ? (defaultPayloadConverter.fromPayload(payload) as { chunks: number; text: string }) : undefined;
      return details && details.chunks >= 1 ? details : undefined;
    }, 'the first heartbeat');
    expect(progress.text.startsWith('one')).toBe(true);
    child.kill('SIGKILL');

    // A second worker takes the next attempt after the heartbeat timeout.
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({
      config: base,
      connection,
      workflowBundle: await bundleWorkflows(),
      activities: createActivities({
        config: base,
        store: openSqliteStore(':memory:'),
        modelEnvironment: { env: { OPENAI_API_KEY: 'sk-test-openai-key' } },
      }),
    });
    const result = await worker.runUntil(async () => {
      // The turn waits for a person, showing what the killed attempt had streamed; the person stops it.
      // Until the new worker's first poll reaches the server, a query is refused as having no poller: that is "not yet".
      const waiting = await until(
        async () =>
          (
            await client.state(workflowId).catch((error: unknown) => {
              if (/no poller seen/.test(String((error as Error).cause ?? error))) return undefined;
              throw error;
            })
          )?.pendingResume,
        'the resume wait',
      );
      expect(waiting).toMatchObject({ step: 0, chunks: progress.chunks, partialText: progress.text });
      expect(provider.requests).toHaveLength(1);
      await client.resume(workflowId, { step: 0, decision: 'stop' });
      return client.result(workflowId);
    });
    expect(result.status).toBe('model_failed');
    expect(result.error).toMatchObject({
      type: 'stream_interrupted',
      message: expect.stringMatching(/an earlier attempt of this model step had streamed \d+ chunks.*stopped by the resume decision/),
    });
    expect(result.partialText).toBe(progress.text);
    expect(provider.requests).toHaveLength(1);
    await client.close();
    await connection.close();
  }, 300_000);
});
