// A sender killed in the middle of a send (the receiver took the request, the sender never heard
// back, nothing was recorded): the activity run again on another process sends the same id, which
// the receiver drops as a duplicate, and a third run sends nothing.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { createSendNotification } from '../../activities/send-notification';
import { PROJECT_ROOT } from '../../config/load-config';
import { openSqliteStore } from '../../intents/sqlite-store';
import { configuredChannels } from '../../notify/configured-channels';
import { notifySchema } from '../../notify/notify-config';
import { sampleNotification, sampleRedactor } from '../helpers/notifications';
import { until } from '../helpers/until';
import { startWebhookReceiver, webhookSecret } from '../helpers/webhook-receiver';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-notify-kill-'));
// Bundled once into one CommonJS file under .tollgate/ (its packages left to node_modules), so the process starts without the TypeScript loader.
const fixture = path.join(PROJECT_ROOT, '.tollgate', 'fixtures', `notify-sender-${process.pid}.cjs`);
mkdirSync(path.dirname(fixture), { recursive: true });
buildSync({
  entryPoints: [path.join(PROJECT_ROOT, 'test', 'fixtures', 'notify-sender.ts')],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  packages: 'external',
  outfile: fixture,
  logLevel: 'error',
});
afterAll(() => {
  rmSync(fixture, { force: true });
});

describe('a sender killed in the middle of a send', () => {
  it('leaves nothing recorded; the re-run sends the same id, the receiver drops it, and a third run sends nothing', async () => {
    const secret = webhookSecret();
    // The first delivery is held unanswered until the sender is killed; the next ones are taken.
    const receiver = await startWebhookReceiver({ secret, answer: (_delivery, index) => (index === 0 ? 'never' : { status: 204 }) });
    const storeFile = path.join(folder, 'intents.db');
    const notify = { channels: { hook: { type: 'webhook', url: receiver.url, timeout: 5_000, attempts: 1 } } };
    const env = { TOLLGATE_WEBHOOK_SECRET: secret };
    const notification = sampleNotification('hook');
    try {
      const child = spawn(
        process.execPath,
        [fixture, JSON.stringify({ notify, env, storeFile, input: { notification, channel: 'hook' } })],
        {
          cwd: PROJECT_ROOT,
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let printed = '';
      child.stdout!.on('data', (chunk: Buffer) => (printed += String(chunk)));
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
      await until('the first delivery at the receiver', async () => (receiver.deliveries.length === 1 ? true : undefined), 30_000);
      child.kill('SIGKILL');
      await expect(exited).resolves.toBe('SIGKILL');
      // It never learned the answer: no receipt printed, nothing recorded.
      expect(printed).not.toContain('"status"');
      const store = openSqliteStore(storeFile);
      try {
        await expect(store.notificationSent!(notification.id)).resolves.toBeUndefined();
        const send = createSendNotification({
          channels: configuredChannels(notifySchema.parse(notify), env),
          store,
          redactor: sampleRedactor(),
        });
        await expect(send({ notification, channel: 'hook' })).resolves.toMatchObject({ status: 'sent', attempts: 1 });
        await expect(send({ notification, channel: 'hook' })).resolves.toMatchObject({ status: 'skipped' });
      } finally {
        await store.close();
      }
      // Two deliveries reached the receiver, both verified and under one id: it processed one.
      expect(receiver.deliveries.map((delivery) => [delivery.id, delivery.verified])).toEqual([
        [notification.id, true],
        [notification.id, true],
      ]);
      expect(receiver.unique.size).toBe(1);
    } finally {
      await receiver.close();
    }
  });
});
