import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { IdempotencyStore } from '../../intents/intent-store';
import { openPostgresStore } from '../../intents/postgres-store';
import { startRetention, type RetentionPass } from '../../intents/retention';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { ToolResult } from '../../common/contract/tools';
import { PROJECT_ROOT } from '../../config/load-config';
import { createWorker } from '../../worker/create-worker';
import { postgresUrl } from '../helpers/postgres';
import { testConfig } from '../helpers/test-config';
import { useTimeSkippingEnvironment } from '../helpers/turn-runner';

const DAY = 24 * 3_600_000;
const receipt: ToolResult = { status: 'success', data: { saved: true } };

const opened: IdempotencyStore[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
});

/** Records one committed and one started intent of a fresh task; returns the task and both keys. */
async function twoIntents(store: IdempotencyStore) {
  const taskId = `task-${randomUUID()}`;
  const claim = (key: string, callId: string) =>
    store.claim({ key, taskId, tool: 'save_draft', callId, argsDigest: 'digest', effect: 'irreversible_write', leaseMs: 1_000 });
  const committed = `${taskId}-committed`;
  const started = `${taskId}-started`;
  const first = await claim(committed, 'call-0-0');
  if (!first.claimed) throw new Error('the first claim of a fresh key must own it');
  await store.commit({ key: committed, owner: first.owner, receipt });
  await claim(started, 'call-1-0');
  return { taskId, committed, started };
}

const backends: Array<[string, () => IdempotencyStore]> = [
  ['sqlite', () => openSqliteStore(path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-retention-')), 'intents.db'))],
  ['postgres', () => openPostgresStore(postgresUrl())],
];

describe.each(backends)('retention of the %s store', (_name, open) => {
  const store = open();
  opened.push(store);

  it('keeps committed intents younger than the retention, deletes older ones, and never deletes a started one', async () => {
    const { taskId, committed, started } = await twoIntents(store);
    const passes: RetentionPass[] = [];
    // Six days on, a 7-day retention keeps everything; eight days on, the committed intent goes and the started one stays.
    let clock = Date.now() + 6 * DAY;
    const retention = startRetention({ store, retentionMs: 7 * DAY, now: () => clock, onPass: (pass) => passes.push(pass) });
    try {
      await expect.poll(() => passes.length).toBe(1);
      expect((await store.listTask(taskId)).map((intent) => intent.key).sort()).toEqual([committed, started]);
      clock = Date.now() + 8 * DAY;
      const pass = await retention.prune();
      expect(pass).toMatchObject({ report: { deleted: expect.any(Number), startedKept: expect.any(Number) } });
      if (!('report' in pass)) throw new Error('the pass failed');
      expect(pass.report.deleted).toBeGreaterThanOrEqual(1);
      expect(pass.report.startedKept).toBeGreaterThanOrEqual(1);
      await expect(store.get(committed)).resolves.toBeUndefined();
      await expect(store.get(started)).resolves.toMatchObject({ state: 'started', callId: 'call-1-0' });
    } finally {
      retention.stop();
    }
  });
});

describe('the retention schedule', () => {
  it('prunes at start and then on every interval, and stops when told', async () => {
    const store = openSqliteStore(':memory:');
    opened.push(store);
    const passes: RetentionPass[] = [];
    const retention = startRetention({ store, retentionMs: DAY, intervalMs: 40, onPass: (pass) => passes.push(pass) });
    expect(passes.length).toBeLessThanOrEqual(1);
    await expect.poll(() => passes.length, { timeout: 2_000 }).toBeGreaterThanOrEqual(3);
    retention.stop();
    const stoppedAt = passes.length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(passes.length).toBe(stoppedAt);
    expect(passes.every((pass) => 'report' in pass)).toBe(true);
  });

  it('reports a store that fails as a failed pass, and refuses a retention of 0', async () => {
    const store = openSqliteStore(':memory:');
    await store.close();
    const passes: RetentionPass[] = [];
    const retention = startRetention({ store, retentionMs: DAY, onPass: (pass) => passes.push(pass) });
    await expect.poll(() => passes.length).toBe(1);
    retention.stop();
    expect(passes[0]).toMatchObject({ error: expect.any(Error) });
    expect('report' in passes[0]).toBe(false);
    expect(() => startRetention({ store, retentionMs: 0 })).toThrow('store.retention must be longer than 0 ms, got 0');
  });
});

describe('a worker prunes its store', () => {
  const environment = useTimeSkippingEnvironment();

  it('at start, by the configured store.retention, and keeps started intents', async () => {
    const config = testConfig({ store: { retention: '1s' } });
    const store = openSqliteStore(config.store.sqliteFile);
    opened.push(store);
    const { taskId, committed, started } = await twoIntents(store);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const worker = await createWorker({
      config: { ...config, temporal: { ...config.temporal, taskQueue: `test-${randomUUID()}` } },
      connection: environment.env.nativeConnection,
      store,
      workflowBundle: environment.workflowBundle,
    });
    await expect(store.listTask(taskId)).resolves.toHaveLength(2);
    await worker.runUntil(async () => {
      await expect.poll(() => store.get(committed), { timeout: 5_000 }).toBeUndefined();
    });
    await expect(store.get(started)).resolves.toMatchObject({ state: 'started' });
  });
});

describe('tollgate intents', () => {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-intents-cli-'));
  const configFile = path.join(folder, 'tollgate.yaml');
  const sqliteFile = path.join(folder, 'idempotency.db');
  writeFileSync(configFile, ['store:', `  sqliteFile: ${sqliteFile}`, ''].join('\n'));

  async function tollgate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), ...args], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, TOLLGATE_CONFIG: configFile },
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  it("lists a task's intents from the configured store, as a table and as JSON", async () => {
    const store = openSqliteStore(sqliteFile);
    const { taskId, committed, started } = await twoIntents(store);
    const [committedRecord, startedRecord] = [await store.get(committed), await store.get(started)];
    await store.close();

    const table = await tollgate(['intents', taskId]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0].split(/\s+/)).toEqual(['KEY', 'TOOL', 'STATE', 'CALL', 'STARTED', 'COMMITTED']);
    expect(lines.slice(2).map((line) => line.split(/\s+/))).toEqual([
      [committed, 'save_draft', 'committed', 'call-0-0', committedRecord!.startedAt, committedRecord!.committedAt],
      [started, 'save_draft', 'started', 'call-1-0', startedRecord!.startedAt, '-'],
    ]);

    const listed = await tollgate(['--json', 'intents', taskId]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      {
        key: committed,
        tool: 'save_draft',
        state: 'committed',
        callId: 'call-0-0',
        startedAt: committedRecord!.startedAt,
        committedAt: committedRecord!.committedAt,
      },
      { key: started, tool: 'save_draft', state: 'started', callId: 'call-1-0', startedAt: startedRecord!.startedAt },
    ]);

    const none = await tollgate(['intents', 'task-without-intents']);
    expect(none).toMatchObject({ code: 0, stdout: 'No intents recorded for task task-without-intents.\n' });
  });
});
