// The record of sent notifications beside the intents, in both stores: what the sendNotification
// activity reads before it sends and writes once the receiver took a notification.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { guardStore } from '../../intents/guard-store';
import type { IdempotencyStore, SentNotification } from '../../intents/intent-store';
import { openPostgresStore } from '../../intents/postgres-store';
import { openSqliteStore } from '../../intents/sqlite-store';
import { postgresUrl } from '../helpers/postgres';

const opened: IdempotencyStore[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
});

const backends: Array<[string, () => IdempotencyStore]> = [
  ['sqlite', () => openSqliteStore(path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-sent-')), 'intents.db'))],
  ['postgres', () => openPostgresStore(postgresUrl())],
];

const sent = (id: string, overrides: Partial<SentNotification> = {}): SentNotification => ({
  id,
  channel: 'ops-mail',
  workflowId: 'turn-1',
  callId: 'call-1',
  kind: 'approval',
  sentAt: new Date().toISOString(),
  attempts: 1,
  ...overrides,
});

describe.each(backends)('the %s store records sent notifications', (_name, open) => {
  const store = guardStore(open());
  opened.push(store);
  const unique = () => `${Date.now().toString(16)}${Math.random().toString(16).slice(2)}`.padEnd(64, '0').slice(0, 64);

  it('reads back what it recorded, keeps the first record of an id, and has none of an id never sent', async () => {
    const id = unique();
    await expect(store.notificationSent!(id)).resolves.toBeUndefined();
    const first = sent(id, { sentAt: '2026-12-05T10:00:00.000Z', attempts: 2 });
    await store.recordNotificationSent!(first);
    await store.recordNotificationSent!(sent(id, { sentAt: '2026-12-05T11:00:00.000Z', attempts: 1, channel: 'other' }));
    await expect(store.notificationSent!(id)).resolves.toEqual(first);
  });

  it('records each of many concurrent writers of one id once, the first to land', async () => {
    const id = unique();
    await Promise.all(Array.from({ length: 8 }, (_, index) => store.recordNotificationSent!(sent(id, { attempts: index + 1 }))));
    const record = await store.notificationSent!(id);
    expect(record?.id).toBe(id);
    expect(record?.attempts).toBeGreaterThanOrEqual(1);
  });

  it('refuses a record missing a field, naming it', async () => {
    await expect(store.recordNotificationSent!({ ...sent(unique()), channel: '' })).rejects.toThrow(
      'recordNotificationSent: channel must be a non-empty string',
    );
    await expect(store.recordNotificationSent!({ ...sent(unique()), attempts: -1 })).rejects.toThrow(/attempts must be a whole number/);
  });

  it('prunes records older than the retention, and keeps newer ones', async () => {
    const old = unique();
    const fresh = unique();
    await store.recordNotificationSent!(sent(old, { sentAt: '2000-01-01T00:00:00.000Z' }));
    await store.recordNotificationSent!(sent(fresh));
    // A cut-off long past, so the prune touches no other test's rows in a shared database.
    const report = await store.prune({ committedBefore: new Date('2001-01-01T00:00:00.000Z') });
    expect(report.notificationsDeleted).toBeGreaterThanOrEqual(1);
    await expect(store.notificationSent!(old)).resolves.toBeUndefined();
    await expect(store.notificationSent!(fresh)).resolves.toMatchObject({ id: fresh });
  });
});
