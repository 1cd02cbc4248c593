import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, ENCRYPTED_ENCODING, parseKeyring } from '../codec/aes-gcm-codec';
import { startCodecServer } from '../codec/codec-server';
import { TollgateClient } from '../client/tollgate-client';
import { startDevServer, type DevServer } from '../server/dev-server';
import { freePort } from '../connection/ports';
import { createWorker } from '../worker/create-worker';
import { bundleWorkflows, quietRuntime } from './helpers/servers';
import { temporalCli } from './helpers/temporal-cli';
import { testConfig } from './helpers/test-config';

const KEYS_ENV = 'TOLLGATE_TEST_ENCRYPTION_KEYS';
const oldKey = randomBytes(32).toString('base64');
const newKey = randomBytes(32).toString('base64');
let server: DevServer;

beforeAll(async () => {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-encryption-'));
  server = await startDevServer({ address: `127.0.0.1:${await freePort()}`, namespace: 'default', dbFile: path.join(folder, 'temporal.db'), logFile: path.join(folder, 'server.log') });
});

afterAll(async () => {
  delete process.env[KEYS_ENV];
  await server?.stop();
});

type HistoryJson = { events: Array<Record<string, unknown>> };

type JsonPayload = { metadata?: Record<string, string>; data?: string };

/** Every payload in a history, with where it sits; search attributes are left out (Temporal never encrypts them). */
function payloadsIn(value: unknown, where = '', found: Array<JsonPayload & { where: string }> = []) {
  if (Array.isArray(value)) value.forEach((item, index) => payloadsIn(item, `${where}[${index}]`, found));
  else if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (record.metadata && typeof record.metadata === 'object' && 'encoding' in (record.metadata as object)) found.push({ ...(record as JsonPayload), where });
    else for (const [key, item] of Object.entries(record)) if (key !== 'searchAttributes') payloadsIn(item, `${where}.${key}`, found);
  }
  return found;
}

describe('payload encryption', () => {
  it('keeps arguments and results out of the history in plaintext, and a codec server decodes them for the key holder', async () => {
    process.env[KEYS_ENV] = `old:${oldKey}`;
    const config = testConfig({ temporal: { address: server.address }, encryption: { keysEnv: KEYS_ENV } });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, workflowBundle: await bundleWorkflows() });
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
    // Temporal's core writes two markers' bookkeeping itself, past every codec: a patch marker's
    // patch id and a local activity marker's type and sequence number. They hold no user data
    // (the whole history is searched for the secrets below); the local activity's result is encrypted.
    const bookkeeping = plain.filter((payload) => /\.markerRecordedEventAttributes\.details\.(patch-data|data)\.payloads\[0\]$/.test(payload.where));
    for (const payload of bookkeeping) {
      const fields = Object.keys(JSON.parse(Buffer.from(payload.data ?? '', 'base64').toString('utf8')) as object);
      expect(fields.every((field) => ['id', 'deprecated', 'seq', 'attempt', 'activity_id', 'activity_type', 'complete_time', 'backoff', 'original_schedule_time'].includes(field)), fields.join()).toBe(true);
    }
    expect(plain.filter((payload) => !bookkeeping.includes(payload)).map((payload) => payload.where)).toEqual([]);
    const decodedData = payloads.map((payload) => Buffer.from(payload.data ?? '', 'base64').toString('latin1')).join('\n');
    for (const secret of ['refund', 'annual plans', 'refunded in full', 'search_local_sources']) {
      expect(text).not.toContain(secret);
      expect(decodedData).not.toContain(secret);
    }

    // The codec server turns them back for someone with the key, and answers the UI's origin only.
    const token = randomBytes(16).toString('hex');
    const codecServer = await startCodecServer({ codec: new AesGcmCodec(parseKeyring(`old:${oldKey}`, 'test')), token, origins: ['http://127.0.0.1:8233'] });
    try {
      const headers = { 'content-type': 'application/json', origin: 'http://127.0.0.1:8233', authorization: `Bearer ${token}` };
      const response = await fetch(`${codecServer.url}/decode`, { method: 'POST', headers, body: JSON.stringify({ payloads: payloads.map(({ metadata, data }) => ({ metadata, data })) }) });
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

  it('names a bad keyring precisely', () => {
    expect(() => parseKeyring('nocolon', 'KEYS')).toThrow('KEYS: expected "keyId:base64key" entries separated by commas');
    expect(() => parseKeyring('k1:c2hvcnQ=', 'KEYS')).toThrow('KEYS: key "k1" is 5 bytes; AES-256-GCM needs 32');
  });
});
