import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_CODEC_REQUEST_BYTES } from '../../codec/codec-server';
import { MAX_LOOPBACK_REQUEST_BYTES } from '../../client/demo/loopback-model-server';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'hostile-http-server.ts');
const TOKEN = randomBytes(16).toString('hex');
/** Random requests per server; each is a raw request on a connection of its own. */
const FUZZ_RUNS = 150;

type Kind = 'codec' | 'metrics' | 'loopback' | 'fake';

interface Served {
  child: ChildProcess;
  port: number;
  /** The path prefix of its routes (`/v1` for the model servers). */
  base: string;
  stderr: () => string;
}

const started: ChildProcess[] = [];

/** Starts one server in a process of its own, so that a crash shows as an exit rather than as an error inside this one. */
async function serve(kind: Kind): Promise<Served> {
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), FIXTURE, kind, TOKEN], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let errors = '';
  child.stderr!.on('data', (chunk) => (errors += chunk));
  const url = await new Promise<URL>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve(new URL(text.trim()));
    });
    child.once('exit', (code) => reject(new Error(`the ${kind} server exited with ${code}: ${errors}`)));
  });
  return { child, port: Number(url.port), base: url.pathname.replace(/\/metrics$|\/$/, ''), stderr: () => errors };
}

afterAll(async () => {
  for (const child of started) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
});

interface RawAnswer {
  status?: number;
  head: string;
  body: string;
}

/** The body of a chunked answer, its chunk sizes and trailers removed. */
function dechunk(text: string): string {
  let body = '';
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, end), 16);
    if (end < 0 || !(size > 0)) return Buffer.from(body, 'latin1').toString('utf8');
    body += rest.slice(end + 2, end + 2 + size);
    rest = rest.slice(end + 2 + size + 2);
  }
}

/** Sends bytes as they are on a new connection and reads the answer until the server closes it (or `cut` ends it early). */
function raw(port: number, bytes: Buffer | string, { cut = false }: { cut?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), 10_000);
    socket.on('data', (chunk) => chunks.push(chunk));
    // A server that answers early (413) and closes may reset the connection or cut our write short
    // (EPIPE); what it answered before that is still read and checked.
    socket.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error),
    );
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const [head, ...rest] = text.split('\r\n\r\n');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1];
      const body = rest.join('\r\n\r\n');
      resolve({
        status: status === undefined ? undefined : Number(status),
        head,
        body: /transfer-encoding: chunked/i.test(head) ? dechunk(body) : body,
      });
    });
    socket.write(bytes, () => {
      if (cut) socket.destroy();
    });
  });
}

/** A request with every byte as given: method, path, headers (Host first unless `host` is null) and body, closed after the answer. */
function request(
  served: Served,
  {
    method,
    target,
    headers = [],
    body = '',
    host,
  }: { method: string; target: string; headers?: Array<[string, string]>; body?: Buffer | string; host?: string | null },
): Promise<RawAnswer> {
  const payload = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const lines = [
    `${method} ${target} HTTP/1.1`,
    ...(host === null ? [] : [`host: ${host ?? `127.0.0.1:${served.port}`}`]),
    ...headers.map(([name, value]) => `${name}: ${value}`),
    `content-length: ${payload.length}`,
    'connection: close',
  ];
  return raw(served.port, Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), payload]));
}

const AUTHORIZED: Array<[string, string]> = [
  ['authorization', `Bearer ${TOKEN}`],
  ['content-type', 'application/json'],
];

/** What a good request gets from each server: the proof that the process still serves after the attack. */
async function expectStillServing(kind: Kind, served: Served) {
  expect(served.child.exitCode, served.stderr()).toBeNull();
  const good: Record<Kind, Parameters<typeof request>[1]> = {
    codec: { method: 'POST', target: '/decode', headers: AUTHORIZED, body: '{"payloads":[]}' },
    metrics: { method: 'GET', target: '/metrics' },
    loopback: {
      method: 'POST',
      target: `${served.base}/chat/completions`,
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] }),
    },
    fake: { method: 'POST', target: `${served.base}/chat/completions`, body: '{"messages":[]}' },
  };
  const answer = await request(served, good[kind]);
  expect(answer.status, answer.head).toBe(200);
  if (kind === 'metrics') expect(answer.body).toContain('tollgate_fixture_total 1');
  if (kind === 'codec') expect(JSON.parse(answer.body)).toEqual({ payloads: [] });
}

/** Path pieces a fuzzed request target is made of: route names, the token, broken and odd percent-encodings. */
const PATH_PIECES = [
  'decode', 'encode', 'metrics', 'v1', 'chat', 'completions', TOKEN, '%E0%A4%A', '%', '%zz', '%00', '%2F', '%C0%AF', '%F0%9F%98%80',
  '..', '.', '', '?', '?a=%', '#', 'x', '%%', ';', '~', '@', "'", '*',
]; // prettier-ignore

const targetArbitrary = fc.oneof(
  {
    weight: 4,
    // `/<token>/<route>`: the shape whose first segment the codec server decodes.
    arbitrary: fc
      .tuple(fc.constantFrom(...PATH_PIECES), fc.constantFrom('decode', 'encode', 'metrics', 'completions'))
      .map(([first, route]) => `/${first}/${route}`),
  },
  fc.array(fc.constantFrom(...PATH_PIECES), { maxLength: 6 }).map((pieces) => `/${pieces.join('/')}`),
  fc.array(fc.constantFrom(...PATH_PIECES), { maxLength: 6 }).map((pieces) => `/${pieces.join('')}`),
  fc.constantFrom('*', 'http://127.0.0.1/decode', '/decode', `/${TOKEN}/decode`, '/v1/chat/completions', '/metrics'),
);
const headerValueArbitrary = fc.oneof(
  fc.constantFrom(
    `Bearer ${TOKEN}`,
    'Bearer ',
    'Bearer x y',
    'http://127.0.0.1:8233',
    'http://evil.example',
    'application/json',
    '',
    '%E0%A4%A',
  ),
  fc.string({ maxLength: 40 }).map((text) => text.replace(/[\r\n]/g, ' ')),
  fc.uint8Array({ maxLength: 20 }).map((bytes) =>
    Buffer.from(bytes)
      .toString('latin1')
      .replace(/[\r\n]/g, ' '),
  ),
);
const headerArbitrary = fc.tuple(
  fc.constantFrom(
    'authorization',
    'origin',
    'content-type',
    'x-namespace',
    'accept',
    'x-tollgate-fake-queue',
    'cookie',
    'x-any',
    'bad name',
    'ä',
  ),
  headerValueArbitrary,
);
const bodyArbitrary = fc.oneof(
  fc.constant(''),
  fc.json().map((text) => text),
  fc.jsonValue().map((value) => JSON.stringify({ payloads: value })),
  fc.jsonValue().map((value) => JSON.stringify({ messages: value, tools: value, model: value })),
  fc
    .array(
      fc.record({
        role: fc.constantFrom('system', 'user', 'assistant', 'tool', 'other'),
        content: fc.jsonValue(),
        tool_calls: fc.jsonValue(),
      }),
      { maxLength: 3 },
    )
    .map((messages) => JSON.stringify({ messages })),
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
);
const requestArbitrary = fc.record({
  method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'BREW', 'get'),
  target: targetArbitrary,
  host: fc.constantFrom<string | null | undefined>(undefined, undefined, undefined, undefined, undefined, 'evil.example', '', null),
  authorized: fc.boolean(),
  headers: fc.array(headerArbitrary, { maxLength: 4 }),
  body: bodyArbitrary,
});

/** The statuses a server may answer a random request with; a 500 means a request reached code that threw, except where noted. */
const ALLOWED: Record<Kind, number[]> = {
  codec: [200, 204, 400, 401, 403, 404, 405, 413, 431],
  metrics: [200, 400, 404, 405, 431],
  loopback: [200, 400, 404, 405, 413, 431],
  // The fake provider answers 500 by design when no reply is queued for the queue a request names.
  fake: [200, 400, 413, 431, 500],
};

async function fuzz(kind: Kind, served: Served) {
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(requestArbitrary, async ({ method, target, host, authorized, headers, body }) => {
      const answer = await request(served, { method, target, host, body, headers: authorized ? [...AUTHORIZED, ...headers] : headers });
      seen.set(answer.status ?? 0, (seen.get(answer.status ?? 0) ?? 0) + 1);
      expect(ALLOWED[kind], `${method} ${target}: ${answer.head.split('\r\n')[0]}`).toContain(answer.status);
      if (kind === 'fake' && answer.status === 500 && method !== 'HEAD') expect(answer.body).toContain('no reply queued');
      expect(served.child.exitCode).toBeNull();
    }),
    { numRuns: FUZZ_RUNS },
  );
  return seen;
}

/** Requests that malformed the parser's view of HTTP itself, answered by every server alike. */
async function expectProtocolKillersRefused(served: Served) {
  expect((await raw(served.port, 'GET / HTTP/1.1\r\nbad header line\r\n\r\n')).status).toBe(400);
  expect((await raw(served.port, 'NOT HTTP AT ALL\r\n\r\n')).status).toBe(400);
  expect((await raw(served.port, `GET / HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`)).status).toBe(431);
  expect((await raw(served.port, 'GET / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello')).status).toBe(400);
  // A chunk size that is not hex, after headers the server may already have answered (403 for a foreign Host, 404, 405).
  const badChunk = await raw(
    served.port,
    `POST /decode HTTP/1.1\r\nhost: 127.0.0.1:${served.port}\r\nauthorization: Bearer ${TOKEN}\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n`,
  );
  expect([400, 404, 405]).toContain(badChunk.status);
}

describe('the codec server under hostile requests', () => {
  it('answers the known killers with 400, 405 or 413 and still decodes for a good caller', async () => {
    const served = await serve('codec');
    const post = (target: string, body: string | Buffer, headers = AUTHORIZED) =>
      request(served, { method: 'POST', target, headers, body });
    for (const target of ['/%E0%A4%A/decode', '/%/decode', '/%zz/encode', '/%C0%AF/decode']) {
      const answer = await post(target, '{"payloads":[]}', [['content-type', 'application/json']]);
      expect({ target, status: answer.status, body: answer.body }).toEqual({
        target,
        status: 400,
        body: expect.stringContaining('is not valid percent-encoding'),
      });
    }
    const bodies: Array<[string, string]> = [
      ['{bad', 'the body is not JSON'],
      ['null', 'expected a JSON body { "payloads": [...] }'],
      ['{"payloads":{}}', 'expected a JSON body'],
      ['{"payloads":[null]}', 'payloads[0]: expected an object'],
      ['{"payloads":[{"metadata":{"encoding":5}}]}', 'payloads[0].metadata.encoding: expected a base64 string'],
      ['{"payloads":[{"metadata":[]}]}', 'payloads[0].metadata: expected an object'],
      ['{"payloads":[{"data":7}]}', 'payloads[0].data: expected a base64 string'],
    ];
    for (const [body, message] of bodies) {
      const answer = await post('/decode', body);
      expect({ body, status: answer.status, message: answer.body }).toEqual({
        body,
        status: 400,
        message: expect.stringContaining(message),
      });
    }
    const wrongMethod = await request(served, { method: 'GET', target: '/decode', headers: AUTHORIZED });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.head.toLowerCase()).toContain('allow: post, options');
    expect((await request(served, { method: 'POST', target: '/elsewhere', headers: AUTHORIZED })).status).toBe(404);
    // A body declared too large is refused before it is sent; one that grows too large while read is refused then.
    const declared = `POST /decode HTTP/1.1\r\nhost: 127.0.0.1:${served.port}\r\nauthorization: Bearer ${TOKEN}\r\ncontent-length: ${MAX_CODEC_REQUEST_BYTES + 1}\r\n\r\n`;
    expect((await raw(served.port, declared)).status).toBe(413);
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    const chunked = [
      Buffer.from(
        `POST /decode HTTP/1.1\r\nhost: 127.0.0.1:${served.port}\r\nauthorization: Bearer ${TOKEN}\r\ntransfer-encoding: chunked\r\n\r\n`,
      ),
      ...Array.from({ length: MAX_CODEC_REQUEST_BYTES / chunk.length + 2 }, () =>
        Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]),
      ),
    ];
    expect((await raw(served.port, Buffer.concat(chunked))).status).toBe(413);
    // A body cut off by the client half way.
    const cut = `POST /decode HTTP/1.1\r\nhost: 127.0.0.1:${served.port}\r\nauthorization: Bearer ${TOKEN}\r\ncontent-length: 1000\r\n\r\n{"payl`;
    await raw(served.port, cut, { cut: true });
    await expectProtocolKillersRefused(served);
    await expectStillServing('codec', served);
  });

  it('answers random paths, methods, headers and bodies with a 2xx or 4xx, never a crash', async () => {
    const served = await serve('codec');
    const seen = await fuzz('codec', served);
    expect(seen.size).toBeGreaterThan(3);
    await expectStillServing('codec', served);
  });
});

describe('the metrics endpoint under hostile requests', () => {
  it('answers wrong methods 405, other paths 404, malformed requests 400, and random ones without a crash', async () => {
    const served = await serve('metrics');
    const posted = await request(served, { method: 'POST', target: '/metrics', body: Buffer.alloc(64 * 1024) });
    expect(posted.status).toBe(405);
    expect(posted.head.toLowerCase()).toContain('allow: get, head');
    expect((await request(served, { method: 'GET', target: '/metrics/%E0%A4%A' })).status).toBe(404);
    expect((await request(served, { method: 'GET', target: '/metrics?x=%E0%A4%A' })).status).toBe(200);
    expect((await request(served, { method: 'HEAD', target: '/metrics' })).status).toBe(200);
    await raw(served.port, `POST /metrics HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\nabc`, { cut: true });
    await expectProtocolKillersRefused(served);
    await fuzz('metrics', served);
    await expectStillServing('metrics', served);
  });
});

describe('the demo loopback model server under hostile requests', () => {
  it('answers malformed chat requests 400, big ones 413, and random ones without a crash', async () => {
    const served = await serve('loopback');
    const target = `${served.base}/chat/completions`;
    const bodies: Array<[unknown, string]> = [
      ['{bad', 'the body is not JSON'],
      [5, 'the body: expected a JSON object'],
      [{ messages: 5 }, 'messages: expected an array'],
      [{ messages: [null] }, 'messages[0]: expected an object'],
      [{ messages: [{ role: 'assistant', tool_calls: 5 }] }, 'messages[0].tool_calls: expected an array'],
      [{ messages: [{ role: 'assistant', tool_calls: [null] }] }, 'messages[0].tool_calls[0]: expected'],
      [
        { messages: [{ role: 'assistant', tool_calls: [{ id: 'c', function: { name: 't', arguments: '{bad' } }] }] },
        'function.arguments: not JSON',
      ],
      [{ messages: [{ role: 'tool', tool_call_id: 'c', content: 'not json' }] }, 'messages[0].content: not JSON'],
      [{ tools: 'all' }, 'tools: expected an array'],
    ];
    for (const [body, message] of bodies) {
      const answer = await request(served, { method: 'POST', target, body: typeof body === 'string' ? body : JSON.stringify(body) });
      expect({ body, status: answer.status, message: answer.body }).toEqual({
        body,
        status: 400,
        message: expect.stringContaining(message),
      });
    }
    expect((await request(served, { method: 'GET', target })).status).toBe(405);
    expect((await request(served, { method: 'POST', target: '/elsewhere' })).status).toBe(404);
    const declared = `POST ${target} HTTP/1.1\r\nhost: x\r\ncontent-length: ${MAX_LOOPBACK_REQUEST_BYTES + 1}\r\n\r\n`;
    expect((await raw(served.port, declared)).status).toBe(413);
    await raw(served.port, `POST ${target} HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{"mess`, { cut: true });
    await expectProtocolKillersRefused(served);
    await fuzz('loopback', served);
    await expectStillServing('loopback', served);
  });
});

describe('the testing kit fake provider under hostile requests', () => {
  it('answers a body that is not JSON 400 without taking a reply, and random requests without a crash', async () => {
    const served = await serve('fake');
    const target = `${served.base}/chat/completions`;
    const answer = await request(served, { method: 'POST', target, body: '{bad' });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ error: { message: expect.stringContaining('the body is not JSON') } });
    await raw(served.port, `POST ${target} HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{"mess`, { cut: true });
    await expectProtocolKillersRefused(served);
    await fuzz('fake', served);
    await expectStillServing('fake', served);
  });
});
