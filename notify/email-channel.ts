import { readFileSync } from 'node:fs';
import nodemailer from 'nodemailer';
import { toMilliseconds } from '../common/duration';
import { ConfigError } from '../config/config-error';
import { systemErrorCode } from '../hardened/network-errors';
import { channelSecret } from './channel-secrets';
import { ChannelFailure, type NotificationChannel } from './notification-channel';
import type { EmailChannelConfig } from './notify-config';

/** The `Message-ID` of a notification's mail: its id at the sender's domain, the same on every attempt. */
export function mailMessageId(id: string, from: string): string {
  return `<${id}@${from.slice(from.lastIndexOf('@') + 1)}>`;
}

/** Codes another attempt would meet alike: a refused sign-in, a refused envelope or message, a connection that would not turn to TLS. */
const FINAL_CODES = new Set(['EAUTH', 'EENVELOPE', 'EMESSAGE', 'ETLS', 'ECONFIG']);

/**
 * Whether another attempt may deliver: a 4xx answer or a broken connection may pass next time; a
 * 5xx refusal, a refused sign-in, STARTTLS not offered or a certificate that does not verify will not.
 */
function retryableMailError(error: { code?: string; responseCode?: number; message?: string }, cause: unknown): boolean {
  if (typeof error.responseCode === 'number') return error.responseCode < 500;
  if (error.code !== undefined && FINAL_CODES.has(error.code)) return false;
  const system = systemErrorCode(cause) ?? '';
  return !/CERT|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(system) && !/certificate/i.test(String(error.message));
}

/**
 * E-mail over SMTP (nodemailer): a plain-text and an HTML part, `Message-ID` derived from the
 * notification's id (a receiver or a mail system may drop the duplicate by it). `secure` is `tls`
 * (TLS from the first byte), `starttls` (the connection must turn to TLS before anything is sent,
 * or the send fails) or `none`; the user and password are read from the environment now, so a
 * missing one stops the worker at start, naming the channel and the variable.
 */
export function emailChannel(name: string, config: EmailChannelConfig, env: NodeJS.ProcessEnv): NotificationChannel {
  const { smtp } = config;
  const auth = smtp.auth
    ? {
        user: channelSecret({ channel: name, key: 'smtp.userEnv', variable: smtp.userEnv, holds: 'the SMTP user', env }),
        pass: channelSecret({ channel: name, key: 'smtp.passwordEnv', variable: smtp.passwordEnv, holds: 'the SMTP password', env }),
      }
    : undefined;
  let ca: string | undefined;
  if (smtp.caFile) {
    try {
      ca = readFileSync(smtp.caFile, 'utf8');
    } catch (error) {
      throw new ConfigError(`approvals.notify.channels.${name}.smtp.caFile: cannot read ${smtp.caFile}: ${(error as Error).message}`);
    }
  }
  const timeoutMs = toMilliseconds(config.timeout);
  const transport = nodemailer.createTransport({
    host: smtp.host,
    port: smtp.port ?? (smtp.secure === 'tls' ? 465 : 587),
    secure: smtp.secure === 'tls',
    requireTLS: smtp.secure === 'starttls',
    ignoreTLS: smtp.secure === 'none',
    ...(auth ? { auth } : {}),
    tls: { minVersion: 'TLSv1.2', ...(ca ? { ca } : {}), ...(smtp.servername ? { servername: smtp.servername } : {}) },
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return {
    name,
    type: 'email',
    carriesArguments: config.arguments,
    attempts: config.attempts,
    timeoutMs,
    async send(message, { signal }) {
      try {
        await transport.sendMail({
          from: config.from,
          to: config.to,
          subject: message.subject,
          text: message.text,
          html: message.html,
          messageId: mailMessageId(message.id, config.from),
          headers: { 'X-Tollgate-Notification': message.id },
          signal,
        });
      } catch (error) {
        const failure = error as { code?: string; responseCode?: number; message?: string };
        const code = failure.code ?? systemErrorCode(error);
        const said = typeof failure.responseCode === 'number' ? `answered ${failure.responseCode}` : `failed${code ? ` (${code})` : ''}`;
        throw new ChannelFailure(
          `SMTP server ${smtp.host} ${said}: ${String(failure.message ?? error).split('\n')[0]}`,
          retryableMailError(failure, (error as { cause?: unknown }).cause ?? error),
          { cause: error },
        );
      }
    },
  };
}
