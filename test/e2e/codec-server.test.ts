import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec, parseKeyring } from '../../codec/aes-gcm-codec';
import { codecEndpointWithToken, codecTokenFromEnvironment, startCodecServer, type CodecServer } from '../../codec/codec-server';
import { PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';
import { testConfig } from '../helpers/test-config';

const UI_ORIGIN = 'http://127.0.0.1:8233';
const token = randomBytes(24).toString('hex');
const codec = new AesGcmCodec(parseKeyring(`k1:${randomBytes(32).toString('base64')}`, 'test'));
let server: CodecServer;
let port: number;
let body: string;

type Answer = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** One raw request, so that every header (Host included) is exactly what the test says. */
function request(method: string, route: string, headers: Record<string, string>, payload?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port, method, path: route, headers: { host: `127.0.0.1:${port}`, ...headers } };
    const outgoing = http.request(options, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: text }));
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

function post(headers: Record<string, string>) {
  return request('POST', '/decode', { 'content-type': 'application/json', ...headers }, body);
}

beforeAll(async () => {
  server = await startCodecServer({ codec, token, origins: [UI_ORIGIN] });
  port = Number(new URL(server.url).port);
  const [encrypted] = await codec.encode([defaultPayloadConverter.toPayload({ secret: 'the launch code' })]);
  const json = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  const metadata = Object.fromEntries(Object.entries(encrypted.metadata!).map(([key, value]) => [key, json(value)]));
  body = JSON.stringify({ payloads: [{ metadata, data: json(encrypted.data!) }] });
});

afterAll(async () => {
  await server?.close();
});

describe('the codec server', () => {
  it('listens on loopback by default', () => {
    expect(server.url).toBe(`http://127.0.0.1:${port}`);
  });

  it('decrypts for a caller with the token, from the Web UI origin', async () => {
    const answer = await post({ authorization: `Bearer ${token}`, origin: UI_ORIGIN });
    expect(answer.status).toBe(200);
    expect(answer.headers['access-control-allow-origin']).toBe(UI_ORIGIN);
    const [payload] = (JSON.parse(answer.body) as { payloads: Array<{ data: string }> }).payloads;
    expect(JSON.parse(Buffer.from(payload.data, 'base64').toString())).toEqual({ secret: 'the launch code' });
  });

  it('decrypts for a caller without an Origin (the Temporal CLI with --codec-auth)', async () => {
    const answer = await post({ authorization: `Bearer ${token}` });
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('payloads');
  });

  it('answers a foreign Origin 403 with no body, even with the token', async () => {
    const answer = await post({ authorization: `Bearer ${token}`, origin: 'http://evil.example' });
    expect(answer.status).toBe(403);
    expect(answer.body).toBe('');
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('answers a foreign Host 403 (DNS rebinding), even with the token and an allowed Origin', async () => {
    for (const host of [`evil.example:${port}`, `127.0.0.1:${port + 1}`, 'localhost']) {
      const answer = await post({ authorization: `Bearer ${token}`, origin: UI_ORIGIN, host });
      expect({ host, status: answer.status, body: answer.body }).toEqual({ host, status: 403, body: '' });
    }
    expect((await post({ authorization: `Bearer ${token}`, host: `localhost:${port}` })).status).toBe(200);
  });

  it('answers 401 without a token or with a wrong one, and decrypts nothing', async () => {
    for (const authorization of [undefined, `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, token, 'Basic Zm9vOmJhcg==', 'Bearer ']) {
      const answer = await post(authorization === undefined ? { origin: UI_ORIGIN } : { authorization, origin: UI_ORIGIN });
      expect({ authorization, status: answer.status, body: answer.body }).toEqual({ authorization, status: 401, body: '' });
      expect(answer.headers['www-authenticate']).toBe('Bearer');
    }
  });

  it('takes the token as the first path segment, for the Web UI that sends no header, and only the right one', async () => {
    const endpoint = new URL(codecEndpointWithToken(server.url, token));
    expect(endpoint.pathname).toBe(`/${token}`);
    const json = { 'content-type': 'application/json', origin: UI_ORIGIN };
    const answer = await request('POST', `${endpoint.pathname}/decode`, json, body);
    expect(answer.status).toBe(200);
    const [payload] = (JSON.parse(answer.body) as { payloads: Array<{ data: string }> }).payloads;
    expect(JSON.parse(Buffer.from(payload.data, 'base64').toString())).toEqual({ secret: 'the launch code' });
    for (const route of [`/${token}x/decode`, `/${token.slice(1)}/decode`, '/decode/decode', `/${token}/${token}/decode`]) {
      const refused = await request('POST', route, json, body);
      expect({ route, status: refused.status, body: refused.body }).toEqual({ route, status: 401, body: '' });
      expect(refused.body).not.toContain('payloads');
    }
    // A right header does not excuse a wrong token in the path.
    const mixed = await request('POST', `/${token}x/decode`, { ...json, authorization: `Bearer ${token}` }, body);
    expect(mixed.status).toBe(401);
    // The path token passes no other check: a foreign Origin or Host is still refused.
    expect((await request('POST', `/${token}/decode`, { ...json, origin: 'http://evil.example' }, body)).status).toBe(403);
    expect((await request('POST', `/${token}/decode`, { ...json, host: `evil.example:${port}` }, body)).status).toBe(403);
  });

  it('answers the CORS preflight of the allowed origin without a token, and no other', async () => {
    const preflight = { 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' };
    const allowed = await request('OPTIONS', '/decode', { ...preflight, origin: UI_ORIGIN });
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe(UI_ORIGIN);
    expect(allowed.headers['access-control-allow-headers']).toContain('authorization');
    const foreign = await request('OPTIONS', '/decode', { ...preflight, origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    expect((await request('OPTIONS', '/decode', preflight)).status).toBe(403);
  });

  it('names a missing token variable, and has the loopback and the Web UI as its defaults', async () => {
    expect(() => codecTokenFromEnvironment('TOLLGATE_CODEC_TOKEN', {})).toThrow(
      'encryption.codecServer.tokenEnv: the environment variable TOLLGATE_CODEC_TOKEN is not set',
    );
    expect(codecTokenFromEnvironment('T', { T: ' abc ' })).toBe('abc');
    await expect(startCodecServer({ codec, token: '', origins: [UI_ORIGIN] })).rejects.toThrow('a bearer token is required');
    const { codecServer } = testConfig().encryption;
    expect(codecServer).toMatchObject({
      host: '127.0.0.1',
      tokenEnv: 'TOLLGATE_CODEC_TOKEN',
      origins: ['http://127.0.0.1:8233', 'http://localhost:8233'],
    });
    const withPath = { encryption: { codecServer: { origins: ['http://ui.example/path'] } } };
    expect(() => testConfig(withPath)).toThrow('expected an origin like http://127.0.0.1:8233');
  });
});

describe('tollgate codec-server', () => {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-codec-cli-'));
  const configFile = path.join(folder, 'tollgate.yaml');
  writeFileSync(configFile, 'encryption:\n  keysEnv: TOLLGATE_TEST_CODEC_KEYS\n  codecServer:\n    tokenEnv: TOLLGATE_TEST_CODEC_TOKEN\n');
  const keys = `k1:${randomBytes(32).toString('base64')}`;
  const cli = path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs');
  const env = (extra: Record<string, string>) => ({
    ...process.env,
    TOLLGATE_CONFIG: configFile,
    TOLLGATE_TEST_CODEC_KEYS: keys,
    TOLLGATE_TEST_CODEC_TOKEN: '',
    ...extra,
  });

  it('refuses to start without its token, in one line naming the variable', async () => {
    const failed = await promisify(execFile)(process.execPath, [cli, 'codec-server'], { cwd: PROJECT_ROOT, env: env({}) }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed.code).toBe(1);
    const named = 'tollgate: encryption.codecServer.tokenEnv: the environment variable TOLLGATE_TEST_CODEC_TOKEN is not set;';
    expect(failed.stderr.startsWith(named)).toBe(true);
    expect(failed.stderr.split('\n')).toHaveLength(2);
  });

  it('serves on loopback with the token from the environment', async () => {
    const codecPort = await freePort();
    const args = [cli, 'codec-server', '--port', String(codecPort)];
    const child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, env: env({ TOLLGATE_TEST_CODEC_TOKEN: token }) });
    try {
      const banner = await new Promise<string>((resolve, reject) => {
        let text = '';
        child.stdout.on('data', (chunk) => {
          text += chunk;
          if (text.includes('\n')) resolve(text);
        });
        child.once('exit', (code) => reject(new Error(`codec-server exited with ${code}`)));
      });
      expect(banner).toContain(`Codec server at http://127.0.0.1:${codecPort}`);
      const url = `http://127.0.0.1:${codecPort}/decode`;
      const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payloads: [] }) };
      expect((await fetch(url, init)).status).toBe(401);
      expect((await fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      const exited = child.exitCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
});
