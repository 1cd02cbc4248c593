import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, defaultPayloadConverter, type Payload } from '@temporalio/common';
import { NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, ENCRYPTED_ENCODING, parseKeyring } from '../../codec/aes-gcm-codec';
import { startCodecServer } from '../../codec/codec-server';
import { TollgateClient } from '../../client/tollgate-client';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { freePort } from '../../connection/ports';
import { createWorker } from '../../worker/create-worker';
import { defineTool } from '../../tools/define-tool';
import { sendMessageTool } from '../../tools/built-in/send-message';
import type { TollgateConfig } from '../../config/config-schema';
import type { ModelStepInput } from '../../common/activity-types';
import type { TurnState } from '../../common/contract/turn';
import { approvalSignal, decideUpdate } from '../../workflows/messages';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { temporalCli } from '../helpers/temporal-cli';
import { testConfig } from '../helpers/test-config';
import { TURN_LIMIT_NAMES } from '../../common/defaults';

const KEYS_ENV = 'TOLLGATE_TEST_ENCRYPTION_KEYS';
const oldKey = randomBytes(32).toString('base64');
const newKey = randomBytes(32).toString('base64');
let server: DevServer;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-encryption-'));
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

type HistoryJson = { events: Array<Record<string, unknown>> };

/** The config of an encrypting worker on a task queue of its own. */
function encryptedConfig(encryption: Record<string, unknown> = {}): TollgateConfig {
  process.env[KEYS_ENV] = `old:${oldKey}`;
  const temporal = { address: server.address, taskQueue: `encrypted-${randomUUID()}` };
  return testConfig({ temporal, encryption: { keysEnv: KEYS_ENV, ...encryption } });
}

/** Polls `read` until `ready` holds (20 s at most). */
async function waitFor(read: () => Promise<TurnState>, ready: (state: TurnState) => boolean): Promise<TurnState> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const state = await read();
    if (ready(state)) return state;
    if (Date.now() > deadline) throw new Error(`the turn's state never became ready: ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

type JsonPayload = { metadata?: Record<string, string>; data?: string };

/** Every payload in a history, with where it sits; search attributes are left out (Temporal never encrypts them). */
function payloadsIn(value: unknown, where = '', found: Array<JsonPayload & { where: string }> = []) {
  if (Array.isArray(value)) value.forEach((item, index) => payloadsIn(item, `${where}[${index}]`, found));
  else if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (record.metadata && typeof record.metadata === 'object' && 'encoding' in (record.metadata as object))
      found.push({ ...(record as JsonPayload), where });
    else for (const [key, item] of Object.entries(record)) if (key !== 'searchAttributes') payloadsIn(item, `${where}.${key}`, found);
  }
  return found;
}

describe('payload encryption', () => {
  it('keeps arguments and results out of the history in plaintext, and a codec server decodes them for the key holder', async () => {
    process.env[KEYS_ENV] = `old:${oldKey}`;
    const config = testConfig({ temporal: { address: server.address }, encryption: { keysEnv: KEYS_ENV } });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, workflowBundle });
    const client = await TollgateClient.connect(config);
    const prompt = 'What is our refund policy for annual plans?';
    const { handle, result } = await worker.runUntil(async () => {
      const started = await client.startTurn({ taskId: 'secret-task', prompt, tools: ['search_local_sources', 'get_document'] });
      return { handle: started, result: await client.result(started.workflowId) };
    });
    expect(result.answer).toContain('refunded in full within 30 days');

    const shown = await temporalCli<HistoryJson>(server.address, ['workflow', 'show', '--workflow-id', handle.workflowId]);
    const text = JSON.stringify(shown);
    const payloads = payloadsIn(shown.events);
    expect(payloads.length).toBeGreaterThan(10);
    const plain = payloads.filter((payload) => Buffer.from(payload.metadata!.encoding, 'base64').toString() !== ENCRYPTED_ENCODING);
    // Temporal's core writes a local activity marker's bookkeeping itself, past every codec: its
    // type and sequence number. It holds no user data (the whole history is searched for the
    // secrets below); the local activity's result is encrypted.
    const bookkeeping = plain.filter((payload) => /\.markerRecordedEventAttributes\.details\.data\.payloads\[0\]$/.test(payload.where));
    for (const payload of bookkeeping) {
      const fields = Object.keys(JSON.parse(Buffer.from(payload.data ?? '', 'base64').toString('utf8')) as object);
      expect(
        fields.every((field) =>
          [
            'id',
            'deprecated',
            'seq',
            'attempt',
            'activity_id',
            'activity_type',
            'complete_time',
            'backoff',
            'original_schedule_time',
          ].includes(field),
        ),
        fields.join(),
      ).toBe(true);
    }
    expect(plain.filter((payload) => !bookkeeping.includes(payload)).map((payload) => payload.where)).toEqual([]);
    const decodedData = payloads.map((payload) => Buffer.from(payload.data ?? '', 'base64').toString('latin1')).join('\n');
    for (const secret of ['refund', 'annual plans', 'refunded in full', 'search_local_sources']) {
      expect(text).not.toContain(secret);
      expect(decodedData).not.toContain(secret);
    }

    // The codec server turns them back for someone with the key, and answers the UI's origin only.
    const token = randomBytes(16).toString('hex');
    const codec = new AesGcmCodec(parseKeyring(`old:${oldKey}`, 'test'));
    const codecServer = await startCodecServer({ codec, token, origins: ['http://127.0.0.1:8233'] });
    try {
      const headers = { 'content-type': 'application/json', origin: 'http://127.0.0.1:8233', authorization: `Bearer ${token}` };
      const body = JSON.stringify({ payloads: payloads.map(({ metadata, data }) => ({ metadata, data })) });
      const response = await fetch(`${codecServer.url}/decode`, { method: 'POST', headers, body });
      expect(response.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8233');
      const decoded = (await response.json()) as { payloads: Array<{ data: string }> };
      expect(decoded.payloads.map((payload) => Buffer.from(payload.data, 'base64').toString()).join('\n')).toContain(prompt);
      const preflight = await fetch(`${codecServer.url}/decode`, { method: 'OPTIONS', headers: { origin: 'http://evil.example' } });
      expect(preflight.status).toBe(403);
    } finally {
      await codecServer.close();
    }

    // Rotation: a keyring whose first key is new still reads what the old key wrote.
    process.env[KEYS_ENV] = `new:${newKey},old:${oldKey}`;
    const rotated = await TollgateClient.connect(config);
    expect((await rotated.result(handle.workflowId)).answer).toBe(result.answer);
    await rotated.close();
    await client.close();
    await connection.close();
  });

  it('encrypts failure messages and stack traces: no path of an interrupted write in the history; clients still read them', async () => {
    const config = encryptedConfig();
    const file = 'payroll-2026-confidential.md';
    const target = path.join(config.workspace, 'drafts', file);
    const lockedTool = defineTool({
      name: 'save_payroll',
      description: 'Saves the payroll draft.',
      input: z.strictObject({ file: z.string().describe('The file name.') }),
      effect: 'reversible_write',
      maxAttempts: 1,
      status: () => 'not_applied',
      handler: () => {
        throw Object.assign(new Error(`EACCES: permission denied, open '${target}'`), { code: 'EACCES' });
      },
    });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools: [lockedTool], workflowBundle });
    const client = await TollgateClient.connect(config);
    const model = { provider: 'scripted' as const, script: [{ toolCalls: [{ tool: 'save_payroll', args: { file } }] }, { text: 'done' }] };
    const { turn, failedTurn, failure } = await worker.runUntil(async () => {
      const started = await client.startTurn({ taskId: 'payroll', prompt: 'Save the payroll.', model, tools: ['save_payroll'] });
      await client.result(started.workflowId);
      // A turn that fails itself: its input names a limit that does not exist, and the failure message quotes it.
      const failing = await client.startTurn({ taskId: 'payroll', prompt: 'x', model, limits: { [target]: 1 } as never });
      return { turn: started, failedTurn: failing, failure: await client.result(failing.workflowId).catch((error: unknown) => error) };
    });

    // TollgateClient reads the workflow's failure message, decrypted.
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('invalid_input');
    expect(cause.message).toBe(`agentTurn input: limits.${target} is not a limit (${TURN_LIMIT_NAMES.join(', ')})`);

    for (const workflowId of [turn.workflowId, failedTurn.workflowId]) {
      const shown = JSON.stringify(await temporalCli<HistoryJson>(server.address, ['workflow', 'show', '--workflow-id', workflowId]));
      expect(shown).toContain('Encoded failure');
      for (const secret of [file, config.workspace, 'EACCES', 'permission denied', 'is not a limit', '    at ']) {
        expect({ workflowId, secret, found: shown.includes(secret) }).toEqual({ workflowId, secret, found: false });
      }
    }
    // The interrupted write's failure is in the history, encrypted, and the workflow read its message: the model's next step got it.
    const history = await client.client.workflow.getHandle(turn.workflowId).fetchHistory();
    const failed = (history.events ?? []).filter((event) => event.activityTaskFailedEventAttributes);
    expect(failed.length).toBeGreaterThan(0);
    for (const event of failed) {
      expect(event.activityTaskFailedEventAttributes!.failure!.encodedAttributes?.metadata?.encoding).toBeDefined();
    }
    const codec = new AesGcmCodec(parseKeyring(`old:${oldKey}`, 'test'));
    const isModelStep = (event: (typeof failed)[number]) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep';
    const scheduled = (history.events ?? []).filter(isModelStep);
    const [secondStepPayload] = await codec.decode([scheduled[1].activityTaskScheduledEventAttributes!.input!.payloads![0] as Payload]);
    const secondStep = defaultPayloadConverter.fromPayload<ModelStepInput>(secondStepPayload);
    expect(JSON.stringify(secondStep.messages.at(-1))).toContain(`EACCES: permission denied, open '${target}'`);
    await client.close();
    await connection.close();
  });

  it('refuses unencrypted decisions: a forged approval from a client without the keyring is rejected; the call does not run', async () => {
    const config = encryptedConfig();
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools: [sendMessageTool({ workspace: config.workspace })], workflowBundle });
    const client = await TollgateClient.connect(config);
    const plain = new Client({ connection: client.client.connection, namespace: config.temporal.namespace });
    const outbox = path.join(config.workspace, 'outbox');
    const acceptedUpdates = async (workflowId: string) =>
      ((await client.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []).filter(
        (event) => event.workflowExecutionUpdateAcceptedEventAttributes,
      ).length;
    const message = { to: 'ops', subject: 'Payroll', body: 'Attached.' };
    const script = [{ toolCalls: [{ tool: 'send_message', args: message }] }, { text: 'sent' }];
    const { result, afterForgery, decision } = await worker.runUntil(async () => {
      const turn = await client.startTurn({ taskId: 'forgery', prompt: 'Send it.', model: { provider: 'scripted', script } });
      const waiting = await waitFor(
        () => client.state(turn.workflowId),
        (state) => state.pendingApprovals.length > 0,
      );
      const { callId, argsDigest } = waiting.pendingApprovals[0];
      const forged = plain.workflow.getHandle(turn.workflowId);
      await forged.signal(approvalSignal, { callId, decision: 'approve', approver: 'mallory', argsDigest });
      // The update's validator refuses it (the plain client cannot even read why: the failure is
      // encrypted); nothing is recorded as accepted.
      await expect(forged.executeUpdate(decideUpdate, { args: [{ callId, decision: 'approve', argsDigest }] })).rejects.toThrow();
      const rejected = await waitFor(
        () => client.state(turn.workflowId),
        (state) => state.rejectedDecisions.length === 1,
      );
      expect(await acceptedUpdates(turn.workflowId)).toBe(0);
      const receipt = await client.approve(turn.workflowId, callId, { approver: 'lead', argsDigest });
      expect(await acceptedUpdates(turn.workflowId)).toBe(1);
      return { result: await client.result(turn.workflowId), afterForgery: rejected, decision: receipt };
    });
    expect(afterForgery.rejectedDecisions).toEqual([
      expect.objectContaining({
        why: 'the decision arrived unencrypted; with payload encryption on, decisions must come from a client holding the keyring',
      }),
    ]);
    expect(afterForgery.decisions).toEqual([]);
    expect(afterForgery.pendingApprovals).toHaveLength(1);
    expect(decision).toMatchObject({ decision: 'approve', accepted: true });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success', executions: 1 })]);
    expect(existsSync(outbox) ? readdirSync(outbox) : []).toHaveLength(1);
    await client.close();
    await connection.close();
  });

  it('with requireEncrypted "all", fails a turn started without encryption and still runs an encrypted one', async () => {
    const config = encryptedConfig({ requireEncrypted: 'all' });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, workflowBundle });
    const client = await TollgateClient.connect(config);
    const plain = new Client({ connection: client.client.connection, namespace: config.temporal.namespace });
    const model = { provider: 'scripted' as const, script: [{ text: 'hello' }] };
    const { forged, genuine } = await worker.runUntil(async () => {
      const workflowId = `plain-${randomUUID()}`;
      const args = [{ taskId: 'plain', prompt: 'hi', model }];
      await plain.workflow.start('agentTurn', { workflowId, taskQueue: config.temporal.taskQueue, args });
      const started = await client.startTurn({ taskId: 'sealed', prompt: 'hi', model });
      return { forged: await client.result(workflowId).catch((error: unknown) => error), genuine: await client.result(started.workflowId) };
    });
    expect(((forged as WorkflowFailedError).cause as ApplicationFailure).message).toBe(
      'agentTurn input: the input arrived unencrypted; encryption.requireEncrypted is "all"',
    );
    expect(genuine).toMatchObject({ status: 'completed', answer: 'hello' });
    await client.close();
    await connection.close();
  });

  it('refuses a prebuilt bundle without the encrypting converters when encryption is on', async () => {
    const config = encryptedConfig();
    await expect(createWorker({ config, workflowBundle: { code: 'exports.agentTurn = () => undefined;' } })).rejects.toThrow(
      'workflowBundle: encryption is on (encryption.keysEnv), but the bundle was built without ENCRYPTED_CONVERTER_PATHS',
    );
  });

  it('names a bad keyring precisely', () => {
    expect(() => parseKeyring('nocolon', 'KEYS')).toThrow('KEYS: expected "keyId:base64key" entries separated by commas');
    expect(() => parseKeyring('k1:c2hvcnQ=', 'KEYS')).toThrow('KEYS: key "k1" is 5 bytes; AES-256-GCM needs 32');
  });
});
