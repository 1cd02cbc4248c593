import type { AddressInfo } from 'node:net';

/** A mail the demo's server took: its subject and the inbox link in its plain-text part. */
export interface DemoMail {
  subject: string;
  link?: string;
}

/** The demo's SMTP server on loopback: its port, the mails it took as they come, and its stop. */
export interface DemoMailServer {
  port: number;
  /** Resolves with the next mail taken. */
  next(): Promise<DemoMail>;
  close(): Promise<void>;
}

/**
 * An SMTP server on 127.0.0.1 for `npm run demo -- --inbox --notify` (the `smtp-server` package,
 * no TLS, no sign-in: a relay on the same machine), each mail parsed back with `mailparser`. Both
 * are development packages, loaded only when the demo asks for them.
 */
export async function startDemoMailServer(): Promise<DemoMailServer> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { SMTPServer } = require('smtp-server') as typeof import('smtp-server');
  const { simpleParser } = require('mailparser') as typeof import('mailparser');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const taken: DemoMail[] = [];
  const waiting: Array<(mail: DemoMail) => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    closeTimeout: 100,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (parsed) => {
          const link = /https?:\/\/\S+#\/item\/\S+/.exec(parsed.text ?? '')?.[0];
          const mail: DemoMail = { subject: parsed.subject ?? '', ...(link ? { link } : {}) };
          const waiter = waiting.shift();
          if (waiter) waiter(mail);
          else taken.push(mail);
          callback();
        },
        (error: Error) => callback(error),
      );
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    next: () => {
      const mail = taken.shift();
      return mail ? Promise.resolve(mail) : new Promise((resolve) => waiting.push(resolve));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
