// A real SMTP server on loopback (smtp-server) that keeps every message it receives, raw and parsed
// back by mailparser, for the tests of the e-mail channel and of who is told.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/** One message the server took: its envelope, its raw text and the message parsed back. */
export interface ReceivedMail {
  from: string | undefined;
  to: string[];
  raw: string;
  parsed: ParsedMail;
  /** The user who signed in for it, when one did. */
  user?: string;
}

/** How the server answers a message's data: take it, refuse it (a code), or never answer. */
export type SmtpAnswer = 'accept' | 'never' | { code: number; message?: string };

/** A running SMTP server: its port, the messages it took, and how to stop it. */
export interface SmtpReceiver {
  port: number;
  mails: ReceivedMail[];
  /** Messages whose data arrived but that were never answered (`never`). */
  held: number;
  close(): Promise<void>;
}

/** A self-signed certificate for `localhost` and 127.0.0.1, made now with openssl: the key, the certificate and its file. */
export function selfSignedCertificate(): { key: string; cert: string; certFile: string } {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-smtp-tls-'));
  const keyFile = path.join(folder, 'key.pem');
  const certFile = path.join(folder, 'cert.pem');
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=localhost'],
      ...['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), certFile };
}

/**
 * Starts an SMTP server on 127.0.0.1. With `tls` it offers STARTTLS (or, with `implicitTls`,
 * speaks TLS from the first byte); with `users` it requires a sign-in by one of them; `answer`
 * decides how each message's data is answered (default: taken).
 */
export async function startSmtpReceiver({
  tls,
  implicitTls = false,
  users,
  answer = () => 'accept',
  options = {},
}: {
  tls?: { key: string; cert: string };
  implicitTls?: boolean;
  users?: Record<string, string>;
  answer?: (index: number) => SmtpAnswer;
  options?: Partial<SMTPServerOptions>;
} = {}): Promise<SmtpReceiver> {
  const receiver: SmtpReceiver = { port: 0, mails: [], held: 0, close: async () => undefined };
  let arrived = 0;
  const pending = new Set<() => void>();
  const server = new SMTPServer({
    secure: implicitTls,
    ...(tls ? { key: tls.key, cert: tls.cert } : { disabledCommands: ['STARTTLS'] }),
    ...(users ? {} : { authOptional: true, disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'] }),
    logger: false,
    // A held connection is cut at once when the test closes the server (the default waits 30 s).
    closeTimeout: 100,
    size: 10 * 1024 * 1024,
    onAuth(auth, _session, callback) {
      if (users && Object.prototype.hasOwnProperty.call(users, auth.username ?? '') && users[auth.username!] === auth.password)
        callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const decided = answer(arrived++);
        if (decided === 'never') {
          receiver.held++;
          pending.add(() => callback(new Error('closing')));
          return;
        }
        if (decided !== 'accept') {
          const error = new Error(decided.message ?? 'refused') as Error & { responseCode: number };
          error.responseCode = decided.code;
          callback(error);
          return;
        }
        simpleParser(raw).then(
          (parsed) => {
            receiver.mails.push({
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
              to: session.envelope.rcptTo.map((recipient) => recipient.address),
              raw,
              parsed,
              ...(typeof session.user === 'string' ? { user: session.user } : {}),
            });
            callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
    ...options,
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.server.address() as AddressInfo).port;
  receiver.close = async () => {
    for (const release of pending) release();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return receiver;
}
