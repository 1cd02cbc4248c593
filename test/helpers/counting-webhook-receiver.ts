// A webhook receiver on loopback that verifies every delivery by the Standard Webhooks specification
// and counts them by id: what the notification tests compare a turn's waits with.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One verified delivery: its id (`webhook-id`), the path it was posted to and its body. */
export interface Delivery {
  id: string;
  path: string;
  type: string;
  data: Record<string, unknown> & {
    kind: string;
    callId: string;
    round: number;
    notice?: number;
    escalatedTo?: string;
    deciders: string[];
  };
}

/** How the receiver answers: `ok` (204), `down` (503, nothing counted as taken), `hold` (no answer until released). */
export type ReceiverMode = 'ok' | 'down' | 'hold';

/** A started receiver: its secret (`whsec_…`), the URL of a path on it, what it received, and how it answers. */
export interface CountingWebhookReceiver {
  secret: string;
  url(path: string): string;
  /** Deliveries taken (answered 2xx), in order; the same id twice is a duplicate the receiver would drop. */
  taken: Delivery[];
  /** Every verified request, answered or not, whatever the mode. */
  received: Delivery[];
  /** Requests whose signature did not verify (always 0 in a passing test). */
  forged: number;
  mode: ReceiverMode;
  /** Taken deliveries by path, one per distinct id. */
  distinct(path?: string): Delivery[];
  /** Answers every request held so far (204), counting them as taken. */
  release(): void;
  /** Drops the held requests' connections without an answer. */
  drop(): void;
  close(): Promise<void>;
}

function bodyOf(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/** Starts a receiver on 127.0.0.1 with a fresh signing secret. */
export async function startCountingWebhookReceiver(): Promise<CountingWebhookReceiver> {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const verifier = new Webhook(secret);
  const held: Array<{ response: ServerResponse; delivery: Delivery }> = [];
  const receiver: CountingWebhookReceiver = {
    secret,
    url: (path) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    taken: [],
    received: [],
    forged: 0,
    mode: 'ok',
    distinct(path) {
      const seen = new Map<string, Delivery>();
      for (const delivery of this.taken) if (path === undefined || delivery.path === path) seen.set(delivery.id, delivery);
      return [...seen.values()];
    },
    release() {
      for (const { response, delivery } of held.splice(0)) {
        receiver.taken.push(delivery);
        response.writeHead(204).end();
      }
    },
    drop() {
      for (const { response } of held.splice(0)) response.socket?.destroy();
    },
    close: () =>
      new Promise((resolve) => {
        receiver.drop();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((request, response) => {
    bodyOf(request).then(
      (body) => {
        const headers = {
          'webhook-id': String(request.headers['webhook-id']),
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        };
        let payload: { type: string; data: Delivery['data'] };
        try {
          payload = verifier.verify(body, headers) as typeof payload;
        } catch {
          receiver.forged++;
          response.writeHead(401).end();
          return;
        }
        const delivery: Delivery = { id: headers['webhook-id'], path: request.url ?? '/', type: payload.type, data: payload.data };
        receiver.received.push(delivery);
        if (receiver.mode === 'down') response.writeHead(503).end('down for the test');
        else if (receiver.mode === 'hold') held.push({ response, delivery });
        else {
          receiver.taken.push(delivery);
          response.writeHead(204).end();
        }
      },
      () => response.writeHead(400).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return receiver;
}
