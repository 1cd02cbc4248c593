// The webhook channel and the sendNotification activity against a real receiver on loopback that
// verifies every delivery with the Standard Webhooks library and drops duplicates by id, and a
// real SQLite store recording each delivered id.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSendNotification } from '../../activities/send-notification';
import { ConfigError } from '../../config/config-error';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { IdempotencyStore } from '../../intents/intent-store';
import { configuredChannels } from '../../notify/configured-channels';
import { notifySchema } from '../../notify/notify-config';
import { webhookChannel } from '../../notify/webhook-channel';
import { sampleNotification, sampleRedactor } from '../helpers/notifications';
import { startWebhookReceiver, webhookSecret, type WebhookAnswer, type WebhookReceiver } from '../helpers/webhook-receiver';

const stores: IdempotencyStore[] = [];
const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

function freshStore(): IdempotencyStore {
  const store = openSqliteStore(path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-notify-')), 'intents.db'));
  stores.push(store);
  return store;
}

/** A receiver, a webhook channel `hook` posting to it, and the activity on a fresh store. */
async function setUp({ answer, channel = {} }: { answer?: (index: number) => WebhookAnswer; channel?: Record<string, unknown> } = {}) {
  const secret = webhookSecret();
  const receiver = await startWebhookReceiver({ secret, answer: answer && ((_delivery, index) => answer(index)) });
  receivers.push(receiver);
  const notify = notifySchema.parse({ channels: { hook: { type: 'webhook', url: receiver.url, timeout: 300, attempts: 3, ...channel } } });
  const channels = configuredChannels(notify, { TOLLGATE_WEBHOOK_SECRET: secret });
  const store = freshStore();
  const warnings: string[] = [];
  const send = createSendNotification({
    channels,
    store,
    redactor: sampleRedactor(),
    firstPauseMs: 10,
    warn: (line) => warnings.push(line),
  });
  return { receiver, store, send, secret, warnings };
}

describe('the webhook channel', () => {
  it('delivers a notification signed by Standard Webhooks: webhook-id is the notification id, and the receiver verifies it', async () => {
    const { receiver, send, store } = await setUp();
    const notification = sampleNotification('hook');
    const receipt = await send({ notification, channel: 'hook' });
    expect(receipt).toMatchObject({ channel: 'hook', id: notification.id, status: 'sent', attempts: 1 });
    expect(receiver.deliveries).toHaveLength(1);
    const [delivery] = receiver.deliveries;
    expect(delivery.verified).toBe(true);
    expect(delivery.id).toBe(notification.id);
    expect(delivery.headers['webhook-signature']).toMatch(/^v1,/);
    expect(delivery.payload).toMatchObject({
      type: 'tollgate.notification.approval',
      data: {
        id: notification.id,
        kind: 'approval',
        tool: 'send_email',
        agent: 'support',
        taskId: 'task-7',
        workflowId: notification.workflowId,
        callId: 'call-1',
        round: 1,
        deciders: ['alice', 'bob'],
        waitsUntil: notification.waitsUntil,
        link: notification.link,
      },
    });
    // The channel is not marked to carry arguments: none are sent.
    expect(delivery.body).not.toContain('customer@example.com');
    expect((delivery.payload as { data: object }).data).not.toHaveProperty('arguments');
    await expect(store.notificationSent!(notification.id)).resolves.toMatchObject({ id: notification.id, channel: 'hook', attempts: 1 });
  });

  it('a receiver verifying with another secret refuses the delivery: the signature covers the body, the id and the time', async () => {
    const { receiver } = await setUp();
    const other = webhookChannel(
      'other',
      notifySchema.parse({ channels: { other: { type: 'webhook', url: receiver.url } } }).channels.other as never,
      {
        TOLLGATE_WEBHOOK_SECRET: webhookSecret(),
      },
    );
    const send = createSendNotification({
      channels: new Map([['other', other]]),
      store: freshStore(),
      redactor: sampleRedactor(),
      firstPauseMs: 1,
    });
    const receipt = await send({ notification: sampleNotification('other'), channel: 'other' });
    // The receiver answers 401 to an unverified delivery: a refusal another attempt would meet alike.
    expect(receipt).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receipt.error).toContain('answered 401');
    expect(receiver.deliveries.map((delivery) => delivery.verified)).toEqual([false]);
    expect(receiver.unique.size).toBe(0);
  });

  it('carries the arguments only where the channel says so, redacted, escaped and bounded', async () => {
    const { receiver, send } = await setUp({ channel: { arguments: true } });
    const notification = sampleNotification('hook', {
      arguments: { to: 'a@example.com', token: 'worker-secret-value-1234', note: 'sk-abcdefghijklmnop1234', z_padding: 'x'.repeat(50_000) },
    });
    await expect(send({ notification, channel: 'hook' })).resolves.toMatchObject({ status: 'sent' });
    const data = (receiver.deliveries[0].payload as { data: { arguments: string; argumentsCut: number } }).data;
    expect(data.arguments).toContain('a@example.com');
    expect(data.arguments).not.toContain('worker-secret-value-1234');
    expect(data.arguments).not.toContain('sk-abcdefghijklmnop1234');
    expect(data.arguments).toContain('[redacted]');
    expect(data.arguments.length).toBeLessThanOrEqual(4_000);
    expect(data.argumentsCut).toBeGreaterThan(45_000);
    expect(receiver.deliveries[0].body.length).toBeLessThan(8_000);
  });

  it('sends an id once: the same activity run again after a success delivers nothing and answers skipped', async () => {
    const { receiver, send } = await setUp();
    const notification = sampleNotification('hook');
    const first = await send({ notification, channel: 'hook' });
    const second = await send({ notification, channel: 'hook' });
    expect(first.status).toBe('sent');
    expect(second).toMatchObject({ status: 'skipped', id: notification.id, at: first.at, attempts: 0 });
    expect(receiver.deliveries).toHaveLength(1);
    // Another notice of the same wait (a reminder) is another id, and is sent.
    const reminder = sampleNotification('hook', { workflowId: notification.workflowId, notice: 1, kind: 'reminder' });
    expect(reminder.id).not.toBe(notification.id);
    await expect(send({ notification: reminder, channel: 'hook' })).resolves.toMatchObject({ status: 'sent' });
    expect(receiver.unique.size).toBe(2);
  });

  it('retries a failing receiver within the bound, with the same webhook-id on each attempt', async () => {
    const { receiver, send } = await setUp({ answer: (index) => (index < 2 ? { status: 503 } : { status: 200 }) });
    const notification = sampleNotification('hook');
    await expect(send({ notification, channel: 'hook' })).resolves.toMatchObject({ status: 'sent', attempts: 3 });
    expect(receiver.deliveries.map((delivery) => delivery.id)).toEqual([notification.id, notification.id, notification.id]);
    expect(receiver.unique.size).toBe(1);
  });

  it('stops at a refusal another attempt would meet alike (4xx), and at a redirect, which it does not follow', async () => {
    const refused = await setUp({ answer: () => ({ status: 422 }) });
    const receipt = await refused.send({ notification: sampleNotification('hook'), channel: 'hook' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receipt.error).toContain('answered 422');
    expect(refused.receiver.deliveries).toHaveLength(1);

    const elsewhere = await startWebhookReceiver({ secret: webhookSecret() });
    receivers.push(elsewhere);
    const redirected = await setUp({ answer: () => ({ status: 307, location: elsewhere.url }) });
    const moved = await redirected.send({ notification: sampleNotification('hook'), channel: 'hook' });
    expect(moved).toMatchObject({ status: 'failed', attempts: 1 });
    expect(moved.error).toContain('redirect, not followed');
    expect(elsewhere.deliveries).toHaveLength(0);
  });

  it('a receiver that never answers costs each attempt its timeout and no more: failed, every attempt abandoned by the sender', async () => {
    const { receiver, send, store } = await setUp({ answer: () => 'never', channel: { attempts: 2 } });
    const notification = sampleNotification('hook');
    const receipt = await send({ notification, channel: 'hook' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 2 });
    expect(receipt.error).toContain('no answer within 300 ms');
    expect(receiver.deliveries).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(receiver.deliveries.map((delivery) => delivery.abandoned)).toEqual([true, true]);
    await expect(store.notificationSent!(notification.id)).resolves.toBeUndefined();
  });

  it('a receiver that answers only after the timeout is abandoned too, and the notification is failed, not recorded as sent', async () => {
    const { receiver, send, store } = await setUp({ answer: () => ({ status: 200, afterMs: 5_000 }), channel: { attempts: 1 } });
    const notification = sampleNotification('hook');
    await expect(send({ notification, channel: 'hook' })).resolves.toMatchObject({ status: 'failed', attempts: 1 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(receiver.deliveries.map((delivery) => delivery.abandoned)).toEqual([true]);
    await expect(store.notificationSent!(notification.id)).resolves.toBeUndefined();
  });

  it('a receiver that cannot be reached fails the notification, never the activity', async () => {
    const { receiver, send } = await setUp({ channel: { attempts: 2 } });
    await receiver.close();
    receivers.splice(receivers.indexOf(receiver), 1);
    const receipt = await send({ notification: sampleNotification('hook'), channel: 'hook' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 2 });
    expect(receipt.error).toMatch(/could not be reached/);
  });
});

describe('hostile text in a webhook', () => {
  it('reaches the payload as marks (CR/LF, bidi, zero-width, tag characters), and no header but the signed ones carries anything of the call', async () => {
    const { receiver, send } = await setUp();
    const notification = sampleNotification('hook', {
      tool: 'send_email\r\nX-Injected: 1',
      agent: 'support\u202Egpj.exe\u200B',
      taskId: 'task\u{E0041}',
    });
    await expect(send({ notification, channel: 'hook' })).resolves.toMatchObject({ status: 'sent' });
    const [delivery] = receiver.deliveries;
    expect(delivery.verified).toBe(true);
    expect(delivery.headers).not.toHaveProperty('x-injected');
    const data = (delivery.payload as { data: Record<string, string> }).data;
    expect(data.tool).toBe('send_email\\u{D}\\u{A}X-Injected: 1');
    expect(data.agent).toBe('support\\u{202E}gpj.exe\\u{200B}');
    expect(data.taskId).toBe('task\\u{E0041}');
    expect(delivery.body).not.toMatch(/[\u202E\u200B\u{E0041}]|\\r\\n/u);
  });
});

describe('the sendNotification activity refuses bad input with a receipt naming what was wrong', () => {
  it('names an unknown channel, a bad id, a link that is not http(s), and input that is not an object', async () => {
    const { receiver, send } = await setUp();
    await expect(send({ notification: sampleNotification('nowhere'), channel: 'nowhere' })).resolves.toMatchObject({
      status: 'failed',
      attempts: 0,
      error: expect.stringContaining('no channel "nowhere"'),
    });
    await expect(
      send({ notification: { ...sampleNotification('hook'), id: 'x\r\nBcc: evil@example.com' }, channel: 'hook' }),
    ).resolves.toMatchObject({
      status: 'failed',
      error: expect.stringContaining('notification.id'),
    });
    await expect(
      send({ notification: sampleNotification('hook', { link: 'javascript:alert(1)' }), channel: 'hook' }),
    ).resolves.toMatchObject({
      status: 'failed',
      error: expect.stringContaining('notification.link'),
    });
    await expect(send(null as never)).resolves.toMatchObject({ status: 'failed', attempts: 0 });
    expect(receiver.deliveries).toHaveLength(0);
  });
});

describe('the webhook channel at the worker start', () => {
  it('stops the start naming the channel and the variable when a secret is missing or malformed', () => {
    const notify = notifySchema.parse({ channels: { 'audit-hook': { type: 'webhook', url: 'https://hooks.example.com/in' } } });
    expect(() => configuredChannels(notify, {})).toThrow(ConfigError);
    expect(() => configuredChannels(notify, {})).toThrow(
      /approvals\.notify\.channels\.audit-hook\.secretEnv: the environment variable TOLLGATE_WEBHOOK_SECRET is not set/,
    );
    expect(() => configuredChannels(notify, { TOLLGATE_WEBHOOK_SECRET: 'whsec_' })).toThrow(
      /audit-hook.*not a Standard Webhooks secret|audit-hook/,
    );
    const fromEnv = notifySchema.parse({ channels: { h: { type: 'webhook', urlEnv: 'HOOK_URL', secretEnv: 'HOOK_SECRET' } } });
    expect(() => configuredChannels(fromEnv, { HOOK_SECRET: webhookSecret() })).toThrow(
      /channels\.h\.urlEnv: the environment variable HOOK_URL is not set/,
    );
  });

  it('refuses a config whose route names a channel or a group that is not there, or a webhook without a URL', () => {
    const noUrl = notifySchema.safeParse({ channels: { hook: { type: 'webhook' } } });
    expect(noUrl.error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`)).toEqual([
      'channels.hook: give the webhook either url or urlEnv (one of them)',
    ]);
    const result = notifySchema.safeParse({
      channels: { hook: { type: 'webhook', url: 'https://hooks.example.com/in' } },
      routes: [{ tools: ['send_email'], channels: ['hook', 'missing'], escalateAfter: '1h', escalateTo: 'finance' }],
    });
    expect(result.success).toBe(false);
    const messages = result.error!.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringContaining('routes.0.channels.1: no channel "missing"'),
        expect.stringContaining('routes.0.escalateTo: no group "finance"'),
      ]),
    );
  });
});
