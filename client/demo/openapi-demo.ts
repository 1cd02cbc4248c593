import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { AgentTurnInput } from '../../common/contract/turn';
import { PROJECT_ROOT } from '../../config/load-config';
import type { OpenapiConfigInput } from '../../tools/openapi/openapi-config';

/** What `npm run demo -- --openapi` runs: a small orders API on loopback, its document, and the turn's script. */
export interface OpenapiDemo {
  openapi: OpenapiConfigInput;
  prompt: string;
  model: AgentTurnInput['model'];
  /** Requests the API received, by `METHOD path`. */
  requests: Map<string, number>;
  /** Refunds it made (once per Idempotency-Key). */
  refunds: number;
  close(): Promise<void>;
}

/**
 * The OpenAPI demo: the orders API of examples/openapi/orders.yaml served on a loopback port (one
 * order, A1), and a scripted model that looks the order up (a GET: a read, no approval) and then
 * refunds part of it (a POST with an Idempotency-Key: an irreversible write, which waits for a person).
 */
export async function openapiDemo(): Promise<OpenapiDemo> {
  const requests = new Map<string, number>();
  const refunded = new Map<string, string>();
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const route = `${request.method} ${request.url}`;
      requests.set(route, (requests.get(route) ?? 0) + 1);
      const json = (status: number, value: unknown) =>
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (request.method === 'GET' && request.url === '/orders/A1') return json(200, { id: 'A1', status: 'delivered', paidCents: 12_900 });
      if (request.method === 'POST' && request.url === '/orders/A1/refunds') {
        const key = String(request.headers['idempotency-key'] ?? '');
        if (!key) return json(400, { message: 'an Idempotency-Key header is required' });
        // A repeat of a key is answered with the first answer; nothing is refunded twice.
        if (!refunded.has(key))
          refunded.set(
            key,
            JSON.stringify({ order: 'A1', refundedCents: (JSON.parse(body) as { cents: number }).cents, refund: refunded.size + 1 }),
          );
        return response.writeHead(201, { 'content-type': 'application/json' }).end(refunded.get(key));
      }
      json(404, { message: 'no such order' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    openapi: {
      sources: {
        orders: { document: path.join(PROJECT_ROOT, 'examples', 'openapi', 'orders.yaml'), baseURL, honoursIdempotencyKey: true },
      },
    },
    prompt: 'Order A1 arrived damaged: refund 30 EUR of it.',
    model: {
      provider: 'scripted',
      script: [
        { toolCalls: [{ tool: 'orders__getOrder', args: { id: 'A1' } }] },
        { toolCalls: [{ tool: 'orders__refundOrder', args: { id: 'A1', body: { cents: 3_000, reason: 'arrived damaged' } } }] },
        { text: 'Order A1 was delivered and paid 129 EUR; 30 EUR of it is refunded.' },
      ],
    },
    requests,
    get refunds() {
      return refunded.size;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
