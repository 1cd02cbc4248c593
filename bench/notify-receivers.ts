// The receivers the notification counts are measured against, on loopback: a webhook receiver that
// verifies every request by the Standard Webhooks specification and may answer late, and an SMTP
// server (smtp-server) that keeps each mail's Message-ID. Each counts what arrived, duplicates too.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { Webhook } from 'standardwebhooks';

/** What a receiver took: one entry per request or mail that arrived (the same id again is a duplicate). */
export interface ReceiverCounts {
  /** The notification id of each arrival, in order (`webhook-id`, or the id in `X-Tollgate-Notification`). */
  ids: string[];
  /** Requests whose signature did not verify. */
  forged: number;
}

/** A webhook receiver: its signing secret, its URL, how long it waits before answering, and what it took. */
export interface BenchWebhookReceiver extends ReceiverCounts {
  secret: string;
  url: string;
  /** How long each answer waits (0: at once). */
  delayMs: number;
  close(): Promise<void>;
}

/** Starts a webhook receiver on 127.0.0.1 with a fresh secret; a request counts as it arrives, before its answer. */
export async function startBenchWebhookReceiver(): Promise<BenchWebhookReceiver> {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const verifier = new Webhook(secret);
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const headers = {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      };
      try {
        verifier.verify(Buffer.concat(chunks).toString('utf8'), headers);
      } catch {
        receiver.forged++;
        response.writeHead(401).end();
        return;
      }
      receiver.ids.push(headers['webhook-id']);
      const answer = () => {
        if (!response.destroyed) response.writeHead(204).end();
      };
      if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const receiver: BenchWebhookReceiver = {
    secret,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    delayMs: 0,
    ids: [],
    forged: 0,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return receiver;
}

/** An SMTP server: its port and what it took. */
export interface BenchSmtpReceiver extends ReceiverCounts {
  port: number;
  close(): Promise<void>;
}

/** Starts an SMTP server on 127.0.0.1 without TLS or sign-in (a relay on the same machine), keeping each mail's notification id. */
export async function startBenchSmtpReceiver(): Promise<BenchSmtpReceiver> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    closeTimeout: 100,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (mail) => {
          receiver.ids.push(String(mail.headers.get('x-tollgate-notification') ?? mail.messageId ?? ''));
          callback();
        },
        (error: Error) => callback(error),
      );
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const receiver: BenchSmtpReceiver = {
    port: (server.server.address() as AddressInfo).port,
    ids: [],
    forged: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return receiver;
}
