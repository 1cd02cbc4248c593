// The e-mail channel against a real SMTP server on loopback (smtp-server), each mail parsed back
// with mailparser and its raw text read: the parts, the link, the Message-ID, STARTTLS and TLS with
// a certificate made for the test, sign-in from the environment, hostile text kept out of headers.
import { createServer, type Server, type Socket } from 'node:net';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSendNotification } from '../../activities/send-notification';
import { ConfigError } from '../../config/config-error';
import { parseConfig } from '../../config/load-config';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { IdempotencyStore } from '../../intents/intent-store';
import { configuredChannels } from '../../notify/configured-channels';
import { mailMessageId } from '../../notify/email-channel';
import { notifySchema } from '../../notify/notify-config';
import { sampleNotification, sampleRedactor } from '../helpers/notifications';
import { selfSignedCertificate, startSmtpReceiver, type SmtpAnswer, type SmtpReceiver } from '../helpers/smtp-receiver';

const stores: IdempotencyStore[] = [];
const receivers: SmtpReceiver[] = [];
let certificate: ReturnType<typeof selfSignedCertificate>;
beforeAll(() => {
  certificate = selfSignedCertificate();
});
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

function freshStore(): IdempotencyStore {
  const store = openSqliteStore(path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-notify-mail-')), 'intents.db'));
  stores.push(store);
  return store;
}

const USERS = { 'notify-bot': 'smtp-pass-5512-secret' };
const ENV = { TOLLGATE_SMTP_USER: 'notify-bot', TOLLGATE_SMTP_PASSWORD: USERS['notify-bot'] };

/** An SMTP server offering STARTTLS with the test's certificate and a sign-in, an e-mail channel `mail` to it, and the activity. */
async function setUp({
  answer,
  smtp = {},
  channel = {},
  server = {},
}: {
  answer?: (index: number) => SmtpAnswer;
  smtp?: Record<string, unknown>;
  channel?: Record<string, unknown>;
  server?: Parameters<typeof startSmtpReceiver>[0];
} = {}) {
  const receiver = await startSmtpReceiver({ tls: certificate, users: USERS, answer, ...server });
  receivers.push(receiver);
  const notify = notifySchema.parse({
    channels: {
      mail: {
        type: 'email',
        to: ['ops@example.com', 'finance@example.com'],
        from: 'tollgate@example.com',
        smtp: { host: '127.0.0.1', port: receiver.port, secure: 'starttls', caFile: certificate.certFile, ...smtp },
        timeout: 2_000,
        attempts: 2,
        ...channel,
      },
    },
  });
  const channels = configuredChannels(notify, ENV);
  const store = freshStore();
  const send = createSendNotification({ channels, store, redactor: sampleRedactor(), firstPauseMs: 10 });
  return { receiver, store, send };
}

/** The header section of a raw message, its lines unfolded. */
function headerLines(raw: string): string[] {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
  return head.replace(/\r\n[ \t]+/g, ' ').split('\r\n');
}

describe('the e-mail channel', () => {
  it('sends over STARTTLS, signed in from the environment: a plain-text and an HTML part, the link, a Message-ID from the id', async () => {
    const { receiver, send, store } = await setUp();
    const notification = sampleNotification('mail');
    const receipt = await send({ notification, channel: 'mail' });
    expect(receipt).toMatchObject({ status: 'sent', attempts: 1, id: notification.id });
    expect(receiver.mails).toHaveLength(1);
    const [mail] = receiver.mails;
    expect(mail.user).toBe('notify-bot');
    expect(mail.from).toBe('tollgate@example.com');
    expect(mail.to).toEqual(['ops@example.com', 'finance@example.com']);
    expect(mail.parsed.subject).toBe('[Tollgate] Approval needed: send_email (agent support) — task task-7');
    expect(mail.parsed.messageId).toBe(mailMessageId(notification.id, 'tollgate@example.com'));
    expect(mail.parsed.messageId).toBe(`<${notification.id}@example.com>`);
    expect(mail.parsed.text).toContain(`Open the item: ${notification.link}`);
    expect(mail.parsed.text).toContain('Who may decide: alice, bob');
    expect(mail.parsed.text).toContain('Following the link decides nothing');
    expect(mail.parsed.html).toContain(`<a href="${notification.link}">`);
    expect(mail.parsed.html).toContain('<th align="left">Tool</th><td>send_email</td>');
    // The channel does not carry arguments: the recipient of the call is in neither part.
    expect(mail.raw).not.toContain('customer@example.com');
    expect(mail.parsed.headers.get('x-tollgate-notification')).toBe(notification.id);
    await expect(store.notificationSent!(notification.id)).resolves.toMatchObject({ channel: 'mail' });
  });

  it('speaks TLS from the first byte with secure: tls, and refuses a certificate it cannot check', async () => {
    const tls = await setUp({ server: { tls: certificate, implicitTls: true, users: USERS }, smtp: { secure: 'tls' } });
    await expect(tls.send({ notification: sampleNotification('mail'), channel: 'mail' })).resolves.toMatchObject({ status: 'sent' });
    expect(tls.receiver.mails).toHaveLength(1);

    // Without the test's certificate authority, the server's certificate does not verify: nothing is sent, and nothing retried.
    const unchecked = await setUp({ smtp: { caFile: undefined } });
    const receipt = await unchecked.send({ notification: sampleNotification('mail'), channel: 'mail' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receipt.error).toMatch(/certificate/i);
    expect(unchecked.receiver.mails).toHaveLength(0);
  });

  it('with secure: starttls never sends over a connection that did not turn to TLS', async () => {
    const { receiver, send } = await setUp({ server: { tls: undefined, users: undefined }, smtp: { auth: false } });
    const receipt = await send({ notification: sampleNotification('mail'), channel: 'mail' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receipt.error).toMatch(/STARTTLS|TLS/);
    expect(receiver.mails).toHaveLength(0);
  });

  it('a refused sign-in fails at once and names no password', async () => {
    const { receiver } = await setUp();
    const notify = notifySchema.parse({
      channels: {
        mail: {
          type: 'email',
          to: ['ops@example.com'],
          from: 'tollgate@example.com',
          smtp: { host: '127.0.0.1', port: receiver.port, caFile: certificate.certFile },
        },
      },
    });
    const wrong = 'not-the-password-8841';
    const send = createSendNotification({
      channels: configuredChannels(notify, { TOLLGATE_SMTP_USER: 'notify-bot', TOLLGATE_SMTP_PASSWORD: wrong }),
      store: freshStore(),
      redactor: sampleRedactor(wrong),
      firstPauseMs: 10,
    });
    const receipt = await send({ notification: sampleNotification('mail'), channel: 'mail' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receipt.error).toMatch(/EAUTH|535/);
    expect(receipt.error).not.toContain(wrong);
    expect(receiver.mails).toHaveLength(0);
  });

  it('a server refusing with 4xx is tried again; with 5xx it is not', async () => {
    const busy = await setUp({ answer: (index) => (index === 0 ? { code: 451, message: 'try later' } : 'accept') });
    await expect(busy.send({ notification: sampleNotification('mail'), channel: 'mail' })).resolves.toMatchObject({
      status: 'sent',
      attempts: 2,
    });
    expect(busy.receiver.mails).toHaveLength(1);
    const refusing = await setUp({ answer: () => ({ code: 554, message: 'rejected' }) });
    const receipt = await refusing.send({ notification: sampleNotification('mail'), channel: 'mail' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receipt.error).toContain('554');
  });

  it('the same id sent by two workers whose record was lost carries the same Message-ID both times; one worker sends it once', async () => {
    const { receiver, send } = await setUp();
    const notification = sampleNotification('mail');
    await send({ notification, channel: 'mail' });
    await expect(send({ notification, channel: 'mail' })).resolves.toMatchObject({ status: 'skipped' });
    expect(receiver.mails).toHaveLength(1);
    // Another worker with a store that never saw the first delivery (the crash between the send and its record).
    const other = await setUp();
    const again = createSendNotification({
      channels: configuredChannels(
        notifySchema.parse({
          channels: {
            mail: {
              type: 'email',
              to: ['ops@example.com'],
              from: 'tollgate@example.com',
              smtp: { host: '127.0.0.1', port: receiver.port, caFile: certificate.certFile },
            },
          },
        }),
        ENV,
      ),
      store: freshStore(),
      redactor: sampleRedactor(),
    });
    await expect(again({ notification, channel: 'mail' })).resolves.toMatchObject({ status: 'sent' });
    expect(other.receiver.mails).toHaveLength(0);
    expect(receiver.mails.map((mail) => mail.parsed.messageId)).toEqual([
      `<${notification.id}@example.com>`,
      `<${notification.id}@example.com>`,
    ]);
  });
});

describe('hostile text never reaches a mail header raw', () => {
  it('CR/LF, bidi and invisible characters in the tool, the agent and the task are shown as marks: no header is added, no recipient', async () => {
    const { receiver, send } = await setUp({ channel: { arguments: true } });
    const notification = sampleNotification('mail', {
      tool: 'send_email\r\nBcc: evil@attacker.example\r\nX-Injected: 1',
      agent: 'support\u202Egpj.exe\u200B',
      taskId: 'task\nSubject: forged\u{E0041}',
      deciders: ['alice\r\nCc: evil@attacker.example'],
      arguments: { 'to\r\nBcc': 'evil@attacker.example', note: 'line one\r\n.\r\nMAIL FROM:<x@y>' },
    });
    await expect(send({ notification, channel: 'mail' })).resolves.toMatchObject({ status: 'sent' });
    const [mail] = receiver.mails;
    expect(mail.to).toEqual(['ops@example.com', 'finance@example.com']);
    const lines = headerLines(mail.raw);
    const names = lines.map((line) => line.slice(0, line.indexOf(':')).toLowerCase());
    expect(names).not.toContain('bcc');
    expect(names).not.toContain('x-injected');
    expect(names.filter((name) => name === 'subject')).toHaveLength(1);
    expect(names.filter((name) => name === 'cc')).toHaveLength(0);
    expect(mail.parsed.subject).toBe(
      '[Tollgate] Approval needed: send_email\\u{D}\\u{A}Bcc: evil@attacker.example\\u{D}\\u{A}X-Injected: 1 (agent support\\u{202E}gpj.exe\\u{200B}) — task task\\u{A}Subject: forged\\u{E0041}',
    );
    expect(mail.parsed.subject).not.toMatch(/[\r\n\u202E\u200B]/u);
    // In the body too each hidden character is a mark, and the HTML part escapes the markup.
    expect(mail.parsed.text).toContain('Agent: support\\u{202E}gpj.exe\\u{200B}');
    expect(mail.parsed.text).not.toMatch(/[\u202E\u200B\u{E0041}]/u);
    expect(mail.parsed.text).toContain('"to\\r\\nBcc"');
  });

  it('markup in a field is escaped in the HTML part, and huge arguments are bounded', async () => {
    const { receiver, send } = await setUp({ channel: { arguments: true } });
    const notification = sampleNotification('mail', {
      tool: '<script>alert(1)</script>',
      arguments: { body: 'y'.repeat(2_000_000), token: 'worker-secret-value-1234' },
    });
    await expect(send({ notification, channel: 'mail' })).resolves.toMatchObject({ status: 'sent' });
    const [mail] = receiver.mails;
    expect(mail.parsed.html).not.toContain('<script>');
    expect(mail.parsed.html).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(mail.raw.length).toBeLessThan(40_000);
    expect(mail.parsed.text).toMatch(/… \d+ characters more, not sent/);
    expect(mail.raw).not.toContain('worker-secret-value-1234');
  });
});

describe('a mail server that hangs costs the bound and no more', () => {
  it('one that never answers the data: failed after the attempts, nothing recorded', async () => {
    const { receiver, send, store } = await setUp({ answer: () => 'never', channel: { timeout: 400 } });
    const notification = sampleNotification('mail');
    const receipt = await send({ notification, channel: 'mail' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 2 });
    expect(receiver.held).toBe(2);
    await expect(store.notificationSent!(notification.id)).resolves.toBeUndefined();
  });

  it('one that accepts the connection and never greets: failed after the attempts', async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => {
      sockets.add(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const notify = notifySchema.parse({
        channels: {
          mail: {
            type: 'email',
            to: ['ops@example.com'],
            from: 'tollgate@example.com',
            smtp: { host: '127.0.0.1', port, auth: false },
            timeout: 300,
            attempts: 2,
          },
        },
      });
      const send = createSendNotification({
        channels: configuredChannels(notify, {}),
        store: freshStore(),
        redactor: sampleRedactor(),
        firstPauseMs: 10,
      });
      const receipt = await send({ notification: sampleNotification('mail'), channel: 'mail' });
      expect(receipt).toMatchObject({ status: 'failed', attempts: 2 });
      expect(sockets.size).toBe(2);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe('the e-mail channel at the worker start', () => {
  it('names the channel and the variable of a missing credential, and refuses a password sent in clear', () => {
    const notify = notifySchema.parse({
      channels: {
        'ops-mail': { type: 'email', to: ['ops@example.com'], from: 'tollgate@example.com', smtp: { host: 'smtp.example.com' } },
      },
    });
    expect(() => configuredChannels(notify, {})).toThrow(ConfigError);
    expect(() => configuredChannels(notify, {})).toThrow(
      'approvals.notify.channels.ops-mail.smtp.userEnv: the environment variable TOLLGATE_SMTP_USER is not set',
    );
    expect(() => configuredChannels(notify, { TOLLGATE_SMTP_USER: 'bot' })).toThrow(
      /smtp\.passwordEnv: the environment variable TOLLGATE_SMTP_PASSWORD/,
    );
    const clear = notifySchema.safeParse({
      channels: {
        m: { type: 'email', to: ['ops@example.com'], from: 'tollgate@example.com', smtp: { host: 'smtp.example.com', secure: 'none' } },
      },
    });
    expect(clear.error?.issues.map((issue) => issue.message)).toEqual([expect.stringContaining('would send the password in clear')]);
    const injected = notifySchema.safeParse({
      channels: { m: { type: 'email', to: ['ops@example.com\r\nBcc: x@y.z'], from: 'tollgate@example.com', smtp: { host: 'h' } } },
    });
    expect(injected.success).toBe(false);
  });

  it("reads the section from a config file: caFile resolved from the file's folder, an unknown key named with its path", () => {
    const data = {
      approvals: {
        notify: {
          channels: {
            'ops-mail': {
              type: 'email',
              to: ['ops@example.com'],
              from: 'tollgate@example.com',
              smtp: { host: 'smtp.example.com', caFile: 'certs/ca.pem' },
            },
          },
        },
      },
    };
    const config = parseConfig(data, { source: '/srv/app/tollgate.config.yaml', baseDir: '/srv/app' });
    const channel = config.approvals.notify.channels['ops-mail'];
    expect(channel.type === 'email' && channel.smtp.caFile).toBe(path.resolve('/srv/app', 'certs/ca.pem'));
    expect(channel).toMatchObject({ arguments: false, attempts: 3, timeout: 10_000, smtp: { secure: 'starttls', auth: true } });
    expect(() =>
      parseConfig(
        { approvals: { notify: { channels: { m: { type: 'email', to: ['a@b.c'], from: 'a@b.c', smtp: { host: 'h', password: 'x' } } } } } },
        {
          source: 'tollgate.config.yaml',
          baseDir: '/srv/app',
        },
      ),
    ).toThrow(/unknown key "approvals\.notify\.channels\.m\.smtp\.password"/);
  });
});
