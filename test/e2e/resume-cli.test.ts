import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { openConfiguredStore } from '../../intents/open-store';
import type { AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { loadConfig, PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { openaiStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-resume-cli-'));
const configFile = path.join(folder, 'tollgate.yaml');
let server: DevServer;
let provider: FakeProvider;
let config: TollgateConfig;
let connection: NativeConnection;
let client: Client;
let worker: TollgateWorker;
let running: Promise<void>;

beforeAll(async () => {
  quietRuntime();
  [server, provider] = await Promise.all([
    freePort().then((port) =>
      startDevServer({
        address: `127.0.0.1:${port}`,
        namespace: 'default',
        dbFile: path.join(folder, 'temporal.db'),
        logFile: path.join(folder, 'server.log'),
      }),
    ),
    startFakeProvider(),
  ]);
  writeFileSync(
    configFile,
    [
      'temporal:',
      `  address: ${server.address}`,
      '  taskQueue: tollgate-resume-cli-test',
      `workspace: ${path.join(folder, 'workspace')}`,
      `corpus: ${path.join(PROJECT_ROOT, 'examples', 'corpus')}`,
      'store:',
      `  sqliteFile: ${path.join(folder, 'idempotency.db')}`,
      'model:',
      '  default: gpt',
      '  models:',
      '    gpt:',
      '      provider: openai',
      '      model: gpt-test',
      `      baseURL: ${provider.baseURL}`,
      '',
    ].join('\n'),
  );
  config = loadConfig({ file: configFile, env: {} });
  connection = await NativeConnection.connect({ address: server.address });
  const activities = createActivities({
    config,
    store: openConfiguredStore(config),
    modelEnvironment: { env: { OPENAI_API_KEY: 'sk-test-openai-key' } },
  });
  worker = await createWorker({ config, connection, activities, workflowBundle: await bundleWorkflows() });
  running = worker.run();
  client = new Client({ connection: await Connection.connect({ address: server.address }) });
});

afterAll(async () => {
  if (running) {
    worker.shutdown();
    await running;
  }
  await client?.connection.close();
  await connection?.close();
  await provider?.close();
  await server?.stop();
});

/** Runs the `tollgate` binary; returns its exit code and output. */
async function tollgate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TOLLGATE_CONFIG: configFile, TEMPORAL_ADDRESS: '' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let tries = 0; tries < 150; tries++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Starts a turn through the CLI whose stream breaks after three chunks, and waits until the inbox lists it. */
async function interruptedTurn(prompt: string) {
  provider.enqueue({ kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 4 });
  const started = await tollgate(['start', prompt]);
  expect(started.code).toBe(0);
  const workflowId = started.stdout.trim();
  const entry = await until(async () => {
    const entries = JSON.parse((await tollgate(['--json', 'inbox'])).stdout) as Array<Record<string, unknown>>;
    return entries.find((candidate) => candidate.workflowId === workflowId);
  }, 'the resume entry in the inbox');
  return { workflowId, entry };
}

describe('tollgate resume and the inbox on the dev server', () => {
  it('lists a turn whose stream broke, asks the model again on `tollgate resume`, and stops the next on `--stop`', async () => {
    const before = provider.requests.length;
    const first = await interruptedTurn('count to four');
    expect(first.entry).toMatchObject({
      kind: 'resume',
      step: 0,
      chunks: 3,
      partialText: 'one two three ',
      needs: { update: 'resume', signal: 'resume', json: { step: 0, decision: 'retry' } },
    });
    const listed = await tollgate(['inbox']);
    expect(listed.stdout).toMatch(new RegExp(`Model streams cut off[^\\n]*\\n[^]*${first.workflowId}\\s+task-\\S+\\s+1\\s+3\\s`));
    expect(provider.requests.length - before).toBe(1);

    provider.enqueue({ kind: 'stream', events: openaiStream.text(['one, two, three, four.']) });
    const resumed = await tollgate(['resume', first.workflowId, '--by', 'ops']);
    expect(resumed).toMatchObject({ code: 0 });
    expect(resumed.stdout).toContain('it had streamed:\none two three');
    expect(resumed.stdout).toContain(`Step 1 of ${first.workflowId} is asked again.`);
    const done = (await client.workflow.getHandle(first.workflowId).result()) as AgentTurnResult;
    expect(done).toMatchObject({
      status: 'completed',
      answer: 'one, two, three, four.',
      modelInterruptions: [{ decision: 'retry', by: 'ops' }],
    });
    expect(provider.requests.length - before).toBe(2);

    const second = await interruptedTurn('count again');
    const stopped = await tollgate(['resume', second.workflowId, '--stop']);
    expect(stopped).toMatchObject({ code: 0 });
    expect(stopped.stdout).toContain(`Stopped ${second.workflowId} at step 1.`);
    const failed = (await client.workflow.getHandle(second.workflowId).result()) as AgentTurnResult;
    expect(failed).toMatchObject({ status: 'model_failed', error: { type: 'stream_interrupted' }, partialText: 'one two three ' });
    expect(provider.requests.length - before).toBe(3);

    // Neither turn waits any more: the inbox no longer lists them, and a late decision is refused with its reason.
    const after = JSON.parse((await tollgate(['--json', 'inbox'])).stdout) as Array<{ workflowId: string }>;
    expect(after.map((entry) => entry.workflowId)).not.toContain(first.workflowId);
    expect(after.map((entry) => entry.workflowId)).not.toContain(second.workflowId);
    const late = await tollgate(['resume', first.workflowId]);
    expect(late.code).not.toBe(0);
    expect(late.stderr).toContain(`no model step of ${first.workflowId} waits for a resume decision`);
  });
});
