import type { TollgateWorker } from '../worker/create-worker';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../client/tollgate-client';
import { PROJECT_ROOT } from '../config/load-config';
import { startDevServer, type DevServer } from '../server/dev-server';
import { freePort } from '../connection/ports';
import { createWorker } from '../worker/create-worker';
import { bundleWorkflows, quietRuntime } from './helpers/servers';
import { testConfig } from './helpers/test-config';
import { waitForState } from './helpers/turn-runner';

/** Debian's chromium; `.ci/run` installs it (`apt-get install chromium`). */
const CHROMIUM = '/usr/bin/chromium';
/** Where the screenshots go. */
const OUTPUT = path.join(PROJECT_ROOT, 'test-output', 'web-ui');

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-web-ui-'));
let server: DevServer;
let browser: Browser;
let connection: NativeConnection;
let worker: TollgateWorker;
let running: Promise<void>;
let client: TollgateClient;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
  quietRuntime();
  const [port, uiPort] = [await freePort(), await freePort()];
  server = await startDevServer({
    address: `127.0.0.1:${port}`,
    uiPort,
    namespace: 'default',
    dbFile: path.join(folder, 'temporal.db'),
    logFile: path.join(folder, 'server.log'),
  });
  const config = testConfig({ temporal: { address: server.address } });
  connection = await NativeConnection.connect({ address: server.address });
  worker = await createWorker({ config, connection, workflowBundle: await bundleWorkflows() });
  running = worker.run();
  client = await TollgateClient.connect(config);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--headless',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await client?.close();
  if (running) {
    worker.shutdown();
    await running;
  }
  await connection?.close();
  await server?.stop();
});

async function until<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (let tries = 0; tries < 150; tries++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the Web UI never showed the awaited text');
}

describe('a turn in the Temporal Web UI', () => {
  it('shows the call awaiting approval in the current details and the activity summaries in the timeline', async () => {
    const handle = await client.startTurn({
      taskId: 'web-ui-1',
      prompt: 'Who must approve a refund above 2,000 EUR?\nSecond line not in the summary.',
    });
    await waitForState(client.client.workflow.getHandle(handle.workflowId), (state) => state.pendingApprovals.length > 0);
    const link = client.uiLink(server.uiUrl!, handle);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    mkdirSync(OUTPUT, { recursive: true });

    await page.goto(link, { waitUntil: 'domcontentloaded' });
    await page.getByText('runTool • save_draft drafts/brief-web-ui-1.md').first().waitFor({ timeout: 30_000 });
    for (const summary of [
      'modelStep • model step',
      'runTool • search_local_sources Who must approve a refund above 2,000 EUR?',
      'runTool • get_document refund-policy',
    ]) {
      await expect(page.getByText(summary).first().isVisible()).resolves.toBe(true);
    }
    // The status lookup is a local activity: the UI shows its marker by the activity's name only.
    await expect(page.getByText('lookupStatus', { exact: true }).first().isVisible()).resolves.toBe(true);
    await page.screenshot({ path: path.join(OUTPUT, 'timeline.png'), fullPage: true });

    await page.getByText('User Metadata', { exact: true }).click();
    // The UI renders the summary and the markdown details inside sandboxed frames: read every frame.
    const shown = await until(async () => {
      const texts = await Promise.all(
        page.frames().map((frame) => frame.evaluate<string>('document.body ? document.body.innerText : ""').catch(() => '')),
      );
      const all = texts.join('\n');
      return all.includes('Waiting for approval') && all.includes('Who must approve a refund above 2,000 EUR?') ? all : undefined;
    });
    // The turn's summary is the prompt's first line only (the details now show the waiting call's
    // arguments, and the drafted message quotes the whole prompt, so the page as a whole may hold it).
    const summary = await (await client.client.workflow.getHandle(handle.workflowId).describe()).staticSummary();
    expect(summary).toBe('Who must approve a refund above 2,000 EUR?');
    expect(shown).toContain(summary);
    expect(shown).toMatch(/call-3-0 · send_message · expires \S+ · argsDigest [0-9a-f]{64}/);
    expect(shown).toMatch(/call-2-0 · save_draft · reversible_write · success · 1 execution/);
    expect(shown).toContain('web-ui-1');
    await page.screenshot({ path: path.join(OUTPUT, 'awaiting-approval.png'), fullPage: true });
    expect(existsSync(path.join(OUTPUT, 'awaiting-approval.png'))).toBe(true);
    await page.close();

    // The person decides on the call they were shown, naming its digest.
    const waiting = (await client.state(handle.workflowId)).pendingApprovals.find((pending) => pending.callId === 'call-3-0')!;
    await client.deny(handle.workflowId, 'call-3-0', { reason: 'browser test', argsDigest: waiting.argsDigest });
    expect((await client.result(handle.workflowId)).toolCalls.at(-1)).toMatchObject({
      tool: 'send_message',
      status: 'denied',
      attempts: 0,
    });
  });
});
