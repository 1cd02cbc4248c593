import type { NotificationChannel } from './notification-channel';
import type { NotifyConfig } from './notify-config';
import { emailChannel } from './email-channel';
import { slackChannel } from './slack-channel';
import { webhookChannel } from './webhook-channel';

/**
 * The channels of config `approvals.notify.channels`, by name, built at the worker's start: each
 * reads its secrets from the environment now, so one missing stops the start naming the channel
 * and the variable.
 */
export function configuredChannels(notify: NotifyConfig, env: NodeJS.ProcessEnv = process.env): Map<string, NotificationChannel> {
  const channels = new Map<string, NotificationChannel>();
  for (const [name, config] of Object.entries(notify.channels)) {
    switch (config.type) {
      case 'webhook':
        channels.set(name, webhookChannel(name, config, env));
        break;
      case 'email':
        channels.set(name, emailChannel(name, config, env));
        break;
      case 'slack':
        channels.set(name, slackChannel(name, config, env));
        break;
    }
  }
  return channels;
}
