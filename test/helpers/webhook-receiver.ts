// A webhook receiver as a Standard Webhooks consumer writes one (node:http): every delivery is
// verified with the specification's own library, and duplicates are dropped by `webhook-id`.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request that reached the receiver. */
export interface WebhookDelivery {
  id: string | undefined;
  headers: IncomingMessage['headers'];
  body: string;
  /** Whether `Webhook.verify` accepted it. */
  verified: boolean;
  /** The verified payload. */
  payload?: unknown;
  /** Whether the sender closed the connection before the receiver answered (it gave up waiting). */
  abandoned: boolean;
}

/** How the receiver answers one request: a status now, after a pause, or never. */
export type WebhookAnswer = { status: number; afterMs?: number; location?: string } | 'never';

/** A running receiver: its URL, every delivery, the verified payloads by id, and how to stop it. */
export interface WebhookReceiver {
  url: string;
  deliveries: WebhookDelivery[];
  /** The verified payloads, one per `webhook-id`: what a receiver that drops duplicates processes. */
  unique: Map<string, unknown>;
  /** Called on each verified delivery that was not a duplicate. */
  onFirst?: (delivery: WebhookDelivery) => void;
  close(): Promise<void>;
}

/** The most bytes of a body the receiver reads. */
const MAX_BODY = 4 * 1024 * 1024;

/**
 * Starts a receiver on loopback. `answer` decides each answer (default 204); `secret` is the
 * signing secret it verifies with. A request held unanswered is ended when the receiver closes.
 */
export async function startWebhookReceiver({
  secret,
  answer = () => ({ status: 204 }),
}: {
  secret: string;
  answer?: (delivery: WebhookDelivery, index: number) => WebhookAnswer;
}): Promise<WebhookReceiver> {
  const verifier = new Webhook(secret);
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const receiver: WebhookReceiver = {
    url: '',
    deliveries: [],
    unique: new Map(),
    close: async () => undefined,
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = typeof request.headers['webhook-id'] === 'string' ? request.headers['webhook-id'] : undefined;
      const delivery: WebhookDelivery = { id, headers: request.headers, body, verified: false, abandoned: false };
      try {
        delivery.payload = verifier.verify(body, request.headers as Record<string, string>);
        delivery.verified = true;
      } catch {
        delivery.verified = false;
      }
      const index = receiver.deliveries.push(delivery) - 1;
      response.on('close', () => {
        if (!response.writableFinished) delivery.abandoned = true;
      });
      if (delivery.verified && id !== undefined && !receiver.unique.has(id)) {
        receiver.unique.set(id, delivery.payload);
        receiver.onFirst?.(delivery);
      }
      const decided: WebhookAnswer = delivery.verified ? answer(delivery, index) : { status: 401 };
      if (decided === 'never') return;
      const reply = () => {
        if (response.destroyed) return;
        response.writeHead(decided.status, decided.location ? { location: decided.location } : {});
        response.end();
      };
      if (decided.afterMs) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          reply();
        }, decided.afterMs);
        timers.add(timer);
      } else reply();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = async () => {
    for (const timer of timers) clearTimeout(timer);
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return receiver;
}

/** A signing secret as the specification writes it: `whsec_` and 32 random bytes in base64. */
export function webhookSecret(): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return `whsec_${Buffer.from(bytes).toString('base64')}`;
}
