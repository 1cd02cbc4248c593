import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, parseKeyring } from '../codec/aes-gcm-codec';
import { codecEndpointWithToken, startCodecServer, type CodecServer } from '../codec/codec-server';
import { TollgateClient } from '../client/tollgate-client';
import { PROJECT_ROOT } from '../config/load-config';
import { freePort } from '../connection/ports';
import { startDevServer, type DevServer } from '../server/dev-server';
import { createWorker, type TollgateWorker } from '../worker/create-worker';
import { bundleWorkflows, quietRuntime } from './helpers/servers';
import { testConfig } from './helpers/test-config';
import { waitForState } from './helpers/turn-runner';

/** Debian's chromium; `.ci/run` installs it (`apt-get install chromium`). */
const CHROMIUM = '/usr/bin/chromium';
const OUTPUT = path.join(PROJECT_ROOT, 'test-output', 'web-ui');
const KEYS_ENV = 'TOLLGATE_TEST_UI_CODEC_KEYS';
const keyring = `ui:${randomBytes(32).toString('base64')}`;
const token = randomBytes(24).toString('hex');
/** On the prompt's second line: not in the turn's summary, only in its encrypted input. */
const SECRET = 'the second line names project nightingale';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-web-ui-codec-'));
let server: DevServer;
let codecPort: number;
let codecServer: CodecServer | undefined;
let browser: Browser;
let connection: NativeConnection;
let worker: TollgateWorker;
let running: Promise<void>;
let client: TollgateClient;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
  quietRuntime();
  process.env[KEYS_ENV] = keyring;
  const [port, uiPort] = [await freePort(), await freePort()];
  codecPort = await freePort();
  // The dev server is told the codec endpoint with the token in its path, as `tollgate server` does.
  server = await startDevServer({
    address: `127.0.0.1:${port}`,
    uiPort,
    namespace: 'default',
    dbFile: path.join(folder, 'temporal.db'),
    logFile: path.join(folder, 'server.log'),
    uiCodecEndpoint: codecEndpointWithToken(`http://127.0.0.1:${codecPort}`, token),
  });
  const config = testConfig({ temporal: { address: server.address }, encryption: { keysEnv: KEYS_ENV } });
  connection = await NativeConnection.connect({ address: server.address });
  worker = await createWorker({ config, connection, workflowBundle: await bundleWorkflows({ encrypted: true }) });
  running = worker.run();
  client = await TollgateClient.connect(config);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
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
  await codecServer?.close();
  await server?.stop();
  delete process.env[KEYS_ENV];
});

/** All text of the page and of its frames (the UI renders payloads and details in frames too). */
async function pageText(page: Page): Promise<string> {
  const texts = await Promise.all(
    page.frames().map((frame) => frame.evaluate<string>('document.body ? document.body.innerText : ""').catch(() => '')),
  );
  return texts.join('\n');
}

async function until(page: Page, ready: (text: string) => boolean, what: string): Promise<string> {
  let text = '';
  for (let tries = 0; tries < 150; tries++) {
    text = await pageText(page);
    if (ready(text)) return text;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the Web UI never showed ${what}; it showed:\n${text.slice(0, 2000)}`);
}

describe('the dev server Web UI with encrypted payloads', () => {
  it('decodes through the token-protected codec server, and shows nothing readable without it', async () => {
    const handle = await client.startTurn({ taskId: 'web-ui-codec', prompt: `Who must approve a refund above 2,000 EUR?\n${SECRET}` });
    await waitForState(client.client.workflow.getHandle(handle.workflowId), (state) => state.pendingApprovals.length > 0);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    mkdirSync(OUTPUT, { recursive: true });

    // No codec server answers yet: the input stays encrypted on screen.
    await page.goto(client.uiLink(server.uiUrl!, handle), { waitUntil: 'domcontentloaded' });
    await until(page, (text) => text.includes('Input'), 'the workflow page');
    await page.waitForTimeout(2_000);
    expect(await pageText(page)).not.toContain(SECRET);

    // With `tollgate codec-server` running for the UI's origin, the same page decodes.
    const codec = new AesGcmCodec(parseKeyring(keyring, KEYS_ENV));
    codecServer = await startCodecServer({ codec, token, port: codecPort, origins: [new URL(server.uiUrl!).origin] });
    await page.reload({ waitUntil: 'domcontentloaded' });
    const decoded = await until(page, (text) => text.includes(SECRET), 'the decoded input');
    expect(decoded).toContain('web-ui-codec');
    await page.screenshot({ path: path.join(OUTPUT, 'decoded-input.png'), fullPage: true });
    await page.close();

    const waiting = (await client.state(handle.workflowId)).pendingApprovals[0];
    await client.deny(handle.workflowId, waiting.callId, { reason: 'browser test', argsDigest: waiting.argsDigest });
    expect((await client.result(handle.workflowId)).toolCalls.at(-1)).toMatchObject({ status: 'denied', attempts: 0 });
  });
});
