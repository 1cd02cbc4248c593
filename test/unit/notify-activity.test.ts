// sendNotification as a worker registers it (createActivities), run as a Temporal activity
// (MockActivityEnvironment): built from the config at start, cancelled cleanly, never throwing.
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import type { NotificationReceipt } from '../../common/contract/notifications';
import { ConfigError } from '../../config/config-error';
import { openSqliteStore } from '../../intents/sqlite-store';
import { sampleNotification } from '../helpers/notifications';
import { testConfig } from '../helpers/test-config';
import { until } from '../helpers/until';
import { startWebhookReceiver, webhookSecret, type WebhookAnswer, type WebhookReceiver } from '../helpers/webhook-receiver';

const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

/** A worker's activities with one webhook channel `audit-hook` to a receiver answering as `answer` says. */
async function workerActivities(answer?: () => WebhookAnswer) {
  const secret = webhookSecret();
  const receiver = await startWebhookReceiver({ secret, answer: answer && (() => answer()) });
  receivers.push(receiver);
  const config = testConfig({
    approvals: {
      notify: { channels: { 'audit-hook': { type: 'webhook', url: receiver.url, secretEnv: 'AUDIT_HOOK_SECRET', timeout: '5s' } } },
    },
  });
  const store = openSqliteStore(':memory:');
  const activities = createActivities({ config, store, modelEnvironment: { env: { AUDIT_HOOK_SECRET: secret } } });
  return { activities, receiver, store };
}

describe('sendNotification on a worker', () => {
  it('is registered by createActivities from the config and delivers as an activity', async () => {
    const { activities, receiver, store } = await workerActivities();
    const notification = sampleNotification('audit-hook');
    const receipt = await new MockActivityEnvironment().run(activities.sendNotification, { notification, channel: 'audit-hook' });
    expect(receipt).toMatchObject({ status: 'sent', channel: 'audit-hook', id: notification.id, attempts: 1 });
    expect(receiver.unique.has(notification.id)).toBe(true);
    await store.close();
  });

  it('a worker whose channel secret is not set does not start, naming the channel and the variable', () => {
    const config = testConfig({
      approvals: {
        notify: { channels: { 'audit-hook': { type: 'webhook', url: 'https://hooks.example.com/in', secretEnv: 'AUDIT_HOOK_SECRET' } } },
      },
    });
    const start = () => createActivities({ config, store: openSqliteStore(':memory:'), modelEnvironment: { env: {} } });
    expect(start).toThrow(ConfigError);
    expect(start).toThrow('approvals.notify.channels.audit-hook.secretEnv: the environment variable AUDIT_HOOK_SECRET is not set');
  });

  it('cancelled while the receiver holds the request: ends at once with failed, sends nothing more and records nothing', async () => {
    const { activities, receiver, store } = await workerActivities(() => 'never');
    const notification = sampleNotification('audit-hook');
    const environment = new MockActivityEnvironment();
    const running: Promise<NotificationReceipt> = environment.run(activities.sendNotification, { notification, channel: 'audit-hook' });
    await until('the delivery at the receiver', async () => (receiver.deliveries.length === 1 ? true : undefined), 10_000);
    environment.cancel();
    const receipt = await running;
    expect(receipt).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receipt.error).toContain('cancelled');
    expect(receiver.deliveries).toHaveLength(1);
    await expect(store.notificationSent!(notification.id)).resolves.toBeUndefined();
    await store.close();
  });
});
