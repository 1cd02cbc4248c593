import { Webhook } from 'standardwebhooks';
import { ConfigError } from '../config/config-error';
import { toMilliseconds } from '../common/duration';
import type { NotificationChannel } from './notification-channel';
import type { NotificationMessage } from './notification-message';
import type { WebhookChannelConfig } from './notify-config';
import { channelSecret } from './channel-secrets';
import { postJson } from './post-json';

/** The body a webhook receiver gets (Standard Webhooks' `type`, `timestamp`, `data`). */
export interface WebhookPayload {
  /** `tollgate.notification.<kind>`: approval, resolution, resume, reminder or escalation. */
  type: string;
  timestamp: string;
  data: NotificationMessage['fields'] & { id: string; link: string; subject: string };
}

/** The body of one message, as it is signed and posted. */
export function webhookPayload(message: NotificationMessage, timestamp: Date): WebhookPayload {
  return {
    type: `tollgate.notification.${message.fields.kind}`,
    timestamp: timestamp.toISOString(),
    data: { id: message.id, subject: message.subject, link: message.link, ...message.fields },
  };
}

/**
 * A webhook signed by the Standard Webhooks specification: each delivery carries `webhook-id` (the
 * notification's id, the same on every attempt, so a receiver drops duplicates by it),
 * `webhook-timestamp` and `webhook-signature` (HMAC-SHA256 with the secret from `secretEnv`). The
 * URL and the secret are read now: one missing stops the worker at start, naming both.
 */
export function webhookChannel(name: string, config: WebhookChannelConfig, env: NodeJS.ProcessEnv): NotificationChannel {
  const url = config.url ?? channelSecret({ channel: name, key: 'urlEnv', variable: config.urlEnv!, holds: 'the webhook URL', env });
  if (!/^https?:\/\/\S+$/.test(url))
    throw new ConfigError(`approvals.notify.channels.${name}.${config.url ? 'url' : 'urlEnv'}: expected an http(s) URL`);
  const secret = channelSecret({ channel: name, key: 'secretEnv', variable: config.secretEnv, holds: 'the signing secret (whsec_…)', env });
  let signer: Webhook;
  try {
    signer = new Webhook(secret);
  } catch (error) {
    throw new ConfigError(
      `approvals.notify.channels.${name}.secretEnv: ${config.secretEnv} is not a Standard Webhooks secret (whsec_ and base64): ${(error as Error).message}`,
    );
  }
  return {
    name,
    type: 'webhook',
    carriesArguments: config.arguments,
    attempts: config.attempts,
    timeoutMs: toMilliseconds(config.timeout),
    async send(message, { signal, timestamp }) {
      const body = JSON.stringify(webhookPayload(message, timestamp));
      await postJson({
        url,
        body,
        signal,
        receiver: `webhook "${name}"`,
        headers: {
          'webhook-id': message.id,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signer.sign(message.id, timestamp, body),
        },
      });
    },
  };
}
