import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

/** The largest request body the codec server reads; a bigger one is answered 413. */
export const MAX_CODEC_REQUEST_BYTES = 16 * 1024 * 1024;

function fromJson({ metadata = {}, data = '' }: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(Object.entries(metadata).map(([key, value]) => [key, Buffer.from(value, 'base64')])),
    data: Buffer.from(data, 'base64'),
  };
}

function toJson({ metadata = {}, data }: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(metadata ?? {}).map(([key, value]) => [key, Buffer.from(value as Uint8Array).toString('base64')]),
    ),
    data: Buffer.from(data ?? new Uint8Array()).toString('base64'),
  };
}

/** A running codec server. */
export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

/** Who may call a codec server. */
export interface CodecServerOptions {
  codec: PayloadCodec;
  /** The bearer token every `/encode` and `/decode` request must carry in `Authorization`. */
  token: string;
  port?: number;
  /** The address it listens on; loopback unless told otherwise. */
  host?: string;
  /** Browser origins allowed to call it (the Web UI's); a request with any other `Origin` is answered 403. */
  origins: string[];
  /** `Host` header values it answers; by default the loopback names with its port (127.0.0.1, localhost, [::1]). */
  hosts?: string[];
}

/** The `Host` values a codec server listening on `port` answers by default. */
export function loopbackHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
}

/** The token a codec server requires, from the environment variable the config names; a clear error when it is not set. */
export function codecTokenFromEnvironment(tokenEnv: string, env: NodeJS.ProcessEnv = process.env): string {
  const token = env[tokenEnv]?.trim();
  if (!token) {
    throw new Error(
      `encryption.codecServer.tokenEnv: the environment variable ${tokenEnv} is not set; ` +
        'it holds the bearer token callers send (e.g. openssl rand -hex 32)',
    );
  }
  return token;
}

function sameToken(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * A request's route and the token its path carries: `/decode` has none, `/<token>/decode` has one.
 * The token in the path is for callers that cannot send a header, such as the dev server's Web UI,
 * which posts to `<endpoint>/decode` without one.
 */
function routeOf(url: string | undefined): { route: string; pathToken?: string } {
  const parts = (url ?? '').split('?')[0].split('/').filter(Boolean);
  if (parts.length === 2) return { route: `/${parts[1]}`, pathToken: decodeURIComponent(parts[0]) };
  return { route: `/${parts.join('/')}` };
}

/** Why a request may not be answered, as a status, or nothing when it may. */
function refusal(
  request: http.IncomingMessage,
  { token, origins, hosts }: { token: string; origins: string[]; hosts: string[] },
): 401 | 403 | undefined {
  const host = request.headers.host?.toLowerCase();
  if (!host || !hosts.includes(host)) return 403;
  const origin = request.headers.origin;
  if (origin !== undefined && !origins.includes(origin)) return 403;
  if (request.method === 'OPTIONS') return origin === undefined ? 403 : undefined;
  const { pathToken } = routeOf(request.url);
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  const given = match?.[1] ?? pathToken;
  if (given === undefined || !sameToken(given, token)) return 401;
  // A request naming two tokens must hold the right one in both places.
  if (match && pathToken !== undefined && !sameToken(pathToken, token)) return 401;
  return undefined;
}

/** The endpoint to give a caller that cannot send an `Authorization` header: the token rides in the path. */
export function codecEndpointWithToken(url: string, token: string): string {
  return `${url.replace(/\/+$/, '')}/${encodeURIComponent(token)}`;
}

function allowCors(response: http.ServerResponse, origin: string): void {
  response.setHeader('access-control-allow-origin', origin);
  response.setHeader('vary', 'Origin');
  response.setHeader('access-control-allow-methods', 'POST, OPTIONS');
  response.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
  response.setHeader('access-control-allow-credentials', 'true');
}

async function answer(
  codec: PayloadCodec,
  route: '/encode' | '/decode',
  request: http.IncomingMessage,
  response: http.ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_CODEC_REQUEST_BYTES) {
      response.writeHead(413, { 'content-type': 'text/plain', connection: 'close' });
      response.end(`request body over ${MAX_CODEC_REQUEST_BYTES} bytes\n`);
      request.destroy();
      return;
    }
    chunks.push(chunk);
  }
  try {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { payloads?: unknown };
    if (!Array.isArray(body?.payloads)) throw new Error('expected a JSON body { "payloads": [...] }');
    const converted = (body.payloads as JsonPayload[]).map(fromJson);
    const result = route === '/encode' ? await codec.encode(converted) : await codec.decode(converted);
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ payloads: result.map(toJson) }));
  } catch (error) {
    response.writeHead(400, { 'content-type': 'text/plain' }).end(`${(error as Error).message}\n`);
  }
}

/**
 * The remote codec endpoint Temporal's Web UI and CLI call (`POST /encode`, `POST /decode` with
 * `{ payloads: [...] }`), so that a person who holds the key sees decrypted payloads. Every
 * request must name one of `hosts` in `Host` (so a page reaching it through DNS rebinding is
 * refused) and, when it has an `Origin`, one of `origins` (403 and no body otherwise); `/encode`
 * and `/decode` also need the token, as `Authorization: Bearer <token>` or as the first path segment
 * (`/<token>/decode`, for the Web UI; see {@link codecEndpointWithToken}), 401 otherwise. A CORS preflight from an
 * allowed origin is answered 204 without a token, as browsers send it without one.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const { codec, token, port = 0, host = '127.0.0.1', origins, hosts } = options;
  if (!token) throw new Error('startCodecServer: a bearer token is required');
  const sockets = new Set<net.Socket>();
  let allowedHosts = (hosts ?? []).map((name) => name.toLowerCase());
  const server = http.createServer((request, response) => {
    const refused = refusal(request, { token, origins, hosts: allowedHosts });
    const origin = request.headers.origin;
    if (refused === 403) {
      response.writeHead(403, { 'content-length': 0 }).end();
      return;
    }
    if (origin !== undefined) allowCors(response, origin);
    if (refused === 401) {
      response.writeHead(401, { 'www-authenticate': 'Bearer', 'content-length': 0 }).end();
      return;
    }
    if (request.method === 'OPTIONS') {
      response.writeHead(204).end();
      return;
    }
    const { route } = routeOf(request.url);
    if (request.method !== 'POST' || (route !== '/encode' && route !== '/decode')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('POST /encode or /decode\n');
      return;
    }
    void answer(codec, route, request, response);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address() as net.AddressInfo;
  if (!hosts) allowedHosts = loopbackHosts(address.port);
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
