import http from 'node:http';
import type net from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

function fromJson({ metadata = {}, data = '' }: JsonPayload): Payload {
  return { metadata: Object.fromEntries(Object.entries(metadata).map(([key, value]) => [key, Buffer.from(value, 'base64')])), data: Buffer.from(data, 'base64') };
}

function toJson({ metadata = {}, data }: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([key, value]) => [key, Buffer.from(value as Uint8Array).toString('base64')])),
    data: Buffer.from(data ?? new Uint8Array()).toString('base64'),
  };
}

/** A running codec server. */
export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The remote codec endpoint Temporal's Web UI and CLI call (`POST /encode`, `POST /decode` with
 * `{ payloads: [...] }`), so that a person who holds the key sees decrypted payloads. It answers
 * CORS requests from the given UI origins only.
 */
export async function startCodecServer({ codec, port = 0, host = '127.0.0.1', origins }: { codec: PayloadCodec; port?: number; host?: string; origins: string[] }): Promise<CodecServer> {
  const sockets = new Set<net.Socket>();
  const server = http.createServer((request, response) => {
    const origin = request.headers.origin;
    if (origin && origins.includes(origin)) {
      response.setHeader('access-control-allow-origin', origin);
      response.setHeader('access-control-allow-methods', 'POST, OPTIONS');
      response.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
      response.setHeader('access-control-allow-credentials', 'true');
    }
    if (request.method === 'OPTIONS') {
      response.writeHead(origin && origins.includes(origin) ? 204 : 403).end();
      return;
    }
    const route = request.url?.replace(/\/+$/, '').split('?')[0];
    if (request.method !== 'POST' || (route !== '/encode' && route !== '/decode')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('POST /encode or /decode\n');
      return;
    }
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', async () => {
      try {
        const { payloads } = JSON.parse(raw) as { payloads: JsonPayload[] };
        const converted = payloads.map(fromJson);
        const result = route === '/encode' ? await codec.encode(converted) : await codec.decode(converted);
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ payloads: result.map(toJson) }));
      } catch (error) {
        response.writeHead(400, { 'content-type': 'text/plain' }).end(`${(error as Error).message}\n`);
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
