import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import {
  decodePathSegment,
  guardClientErrors,
  parseJsonBody,
  readRequestBody,
  RequestRefusal,
  requestGuard,
} from '../hardened/request-guard';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

/** The largest request body the codec server reads; a bigger one is answered 413. */
export const MAX_CODEC_REQUEST_BYTES = 16 * 1024 * 1024;

/** A payload of the request's JSON, or a 400 naming which one is not `{ metadata?: { key: base64 }, data?: base64 }`. */
function fromJson(payload: unknown, position: number): Payload {
  const where = `payloads[${position}]`;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
    throw new RequestRefusal(400, `${where}: expected an object`);
  const { metadata = {}, data = '' } = payload as JsonPayload;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw new RequestRefusal(400, `${where}.metadata: expected an object of base64 strings`);
  }
  if (typeof data !== 'string') throw new RequestRefusal(400, `${where}.data: expected a base64 string`);
  const entries = Object.entries(metadata as Record<string, unknown>).map(([key, value]) => {
    if (typeof value !== 'string') throw new RequestRefusal(400, `${where}.metadata.${key.slice(0, 40)}: expected a base64 string`);
    return [key, Buffer.from(value, 'base64')];
  });
  return { metadata: Object.fromEntries(entries), data: Buffer.from(data, 'base64') };
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
 * which posts to `<endpoint>/decode` without one. A token that is not valid percent-encoding is
 * a 400 (a {@link RequestRefusal}).
 */
function routeOf(url: string | undefined): { route: string; pathToken?: string } {
  const parts = (url ?? '').split('?')[0].split('/').filter(Boolean);
  if (parts.length === 2) return { route: `/${parts[1]}`, pathToken: decodePathSegment(parts[0]) };
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
  const body = parseJsonBody(await readRequestBody(request, MAX_CODEC_REQUEST_BYTES)) as { payloads?: unknown } | null;
  if (typeof body !== 'object' || body === null || !Array.isArray(body.payloads)) {
    throw new RequestRefusal(400, 'expected a JSON body { "payloads": [...] }');
  }
  const converted = body.payloads.map(fromJson);
  let result: Payload[];
  try {
    result = route === '/encode' ? await codec.encode(converted) : await codec.decode(converted);
  } catch (error) {
    // A payload the codec cannot decode (another key, a damaged ciphertext) is the caller's error.
    throw new RequestRefusal(400, `${route.slice(1)}: ${(error as Error).message}`);
  }
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ payloads: result.map(toJson) }));
}

/**
 * The remote codec endpoint Temporal's Web UI and CLI call (`POST /encode`, `POST /decode` with
 * `{ payloads: [...] }`), so that a person who holds the key sees decrypted payloads. Every
 * request must name one of `hosts` in `Host` (so a page reaching it through DNS rebinding is
 * refused) and, when it has an `Origin`, one of `origins` (403 and no body otherwise); `/encode`
 * and `/decode` also need the token, as `Authorization: Bearer <token>` or as the first path segment
 * (`/<token>/decode`, for the Web UI; see {@link codecEndpointWithToken}), 401 otherwise. A CORS preflight from an
 * allowed origin is answered 204 without a token, as browsers send it without one. A malformed
 * request is answered, never thrown: a path token that is not valid percent-encoding, a body that
 * is not JSON or not `{ payloads }`, or that the codec cannot decode, 400; another route 404;
 * another method 405; a body over {@link MAX_CODEC_REQUEST_BYTES} 413 (counted while read).
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const { codec, token, port = 0, host = '127.0.0.1', origins, hosts } = options;
  if (!token) throw new Error('startCodecServer: a bearer token is required');
  const sockets = new Set<net.Socket>();
  let allowedHosts = (hosts ?? []).map((name) => name.toLowerCase());
  const handle = (request: http.IncomingMessage, response: http.ServerResponse): Promise<void> | undefined => {
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
    if (route !== '/encode' && route !== '/decode') throw new RequestRefusal(404, 'POST /encode or /decode');
    if (request.method !== 'POST') throw new RequestRefusal(405, `${route} takes POST`, { allow: 'POST, OPTIONS' });
    return answer(codec, route, request, response);
  };
  const server = http.createServer(requestGuard({ name: 'codec server', handle }));
  guardClientErrors(server);
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
