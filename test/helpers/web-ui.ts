import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { TollgateClient, type TurnHandle } from '../../client/tollgate-client';
import type { TollgateConfig } from '../../config/config-schema';
import { PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';
import { startDevServer, type DevServer } from '../../server/dev-server';
import type { ToolDefinition } from '../../tools/define-tool';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { bundleWorkflows, quietRuntime } from './servers';
import { testConfig } from './test-config';

/** Debian's chromium; `.ci/run` installs it (`apt-get install chromium`). */
export const CHROMIUM = '/usr/bin/chromium';
/** Where the browser tests' screenshots go. */
export const WEB_UI_OUTPUT = path.join(PROJECT_ROOT, 'test-output', 'web-ui');

/** How one browser test file wants its dev server, worker and client. */
export interface WebUiOptions {
  /** Changes to the test config (the dev server's address is added). */
  config?: Record<string, unknown>;
  /** Bundles the workflows with the converters of an encrypting worker. */
  encrypted?: boolean;
  /** The codec server the Web UI calls, told to the dev server at its start. */
  uiCodecEndpoint?: () => string;
  /** The tools the worker serves (the built-in ones when left out), given the config it runs with. */
  tools?: (config: TollgateConfig) => ToolDefinition[];
}

/** What a browser test file runs against, filled in before its tests run. */
export interface WebUiEnvironment {
  server: DevServer;
  config: TollgateConfig;
  client: TollgateClient;
  browser: Browser;
}

/**
 * A dev server with its Web UI on free ports (state in a temporary folder), a worker serving the
 * turns, a client and a headless Chromium, started before the calling file's tests and stopped after.
 */
export function useWebUi(options: WebUiOptions = {}): WebUiEnvironment {
  const holder = {} as WebUiEnvironment;
  let connection: NativeConnection | undefined;
  let worker: TollgateWorker | undefined;
  let running: Promise<void> | undefined;
  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
    quietRuntime();
    const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-web-ui-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    holder.server = await startDevServer({
      address: `127.0.0.1:${port}`,
      uiPort,
      namespace: 'default',
      dbFile: path.join(folder, 'temporal.db'),
      logFile: path.join(folder, 'server.log'),
      uiCodecEndpoint: options.uiCodecEndpoint?.(),
    });
    const config = testConfig({ ...options.config, temporal: { address: holder.server.address } });
    holder.config = config;
    connection = await NativeConnection.connect({ address: holder.server.address });
    const workflowBundle = await bundleWorkflows({ encrypted: options.encrypted });
    worker = await createWorker({ config, connection, workflowBundle, tools: options.tools?.(config) });
    running = worker.run();
    holder.client = await TollgateClient.connect(config);
    holder.browser = await chromium.launch({
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
    await holder.browser?.close();
    await holder.client?.close();
    if (worker && running) {
      worker.shutdown();
      await running;
    }
    await connection?.close();
    await holder.server?.stop();
  });
  return holder;
}

/** All text of the page and of its frames (the UI renders payloads, summaries and details in sandboxed frames). */
export async function pageText(page: Page): Promise<string> {
  const texts = await Promise.all(
    page.frames().map((frame) => frame.evaluate<string>('document.body ? document.body.innerText : ""').catch(() => '')),
  );
  return texts.join('\n');
}

/** The page's text (with its frames') once `ready` holds for it, polling for up to 30 s; `what` names it in the error. */
export async function untilShown(page: Page, ready: (text: string) => boolean, what: string): Promise<string> {
  let text = '';
  for (let tries = 0; tries < 150; tries++) {
    text = await pageText(page);
    if (ready(text)) return text;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the Web UI never showed ${what}; it showed:\n${text.slice(0, 2000)}`);
}

/** The turn's workflow page, open on its details (the waiting items with the JSON each signal takes). */
export async function openDetails(ui: WebUiEnvironment, handle: TurnHandle): Promise<Page> {
  const page = await ui.browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(ui.client.uiLink(ui.server.uiUrl!, handle), { waitUntil: 'domcontentloaded' });
  await page.getByText('User Metadata', { exact: true }).click();
  return page;
}

/** The JSON the details tell a person to send with `signal`, as the page shows it (the first such line). */
export async function shownSignalJson(page: Page, signal: 'approval' | 'resolve'): Promise<Record<string, unknown>> {
  const pattern = new RegExp(`the ${signal} signal with (\\{[^\\n]*?\\}) \\(`);
  const text = await untilShown(page, (shown) => pattern.test(shown), `the JSON of the ${signal} signal`);
  return JSON.parse(pattern.exec(text)![1]) as Record<string, unknown>;
}

/**
 * Sends `signal` with `payload` (JSON text) as an operator does in the Web UI: More Actions → Send a
 * Signal, the signal chosen from the turn's list, the JSON typed into the input, Submit. Returns once
 * the UI's request was answered and its dialog closed; `shot` names the screenshot of the filled dialog.
 */
export async function sendFromUi(page: Page, signal: 'approval' | 'resolve', payload: string, shot: string): Promise<void> {
  await page.getByRole('button', { name: 'More Actions' }).click();
  await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
  // The page holds two copies of the dialog; the open one is the one shown.
  const dialog = page.locator('dialog[open][data-testid=signal-confirmation-modal]');
  await dialog.getByTestId('signal-select-button').click();
  await dialog.getByRole('option', { name: signal, exact: true }).click();
  // The first text box is the select's; the second is the payload editor.
  const editor = dialog.getByRole('textbox').nth(1);
  await editor.fill(payload);
  // Leaving the editor reformats its JSON over several lines, which moves Submit down while the
  // button is held: a click straight from the editor presses at Submit's old place, releases at its
  // new one and sends nothing. So the focus moves on first; the click finds Submit where it then is.
  const submit = dialog.getByTestId('confirm-modal-button');
  await submit.focus();
  await expect.poll(async () => (await editor.innerText()).split('\n').length).toBeGreaterThan(1);
  mkdirSync(WEB_UI_OUTPUT, { recursive: true });
  await page.screenshot({ path: path.join(WEB_UI_OUTPUT, shot), fullPage: true });
  const answered = page.waitForResponse(
    (response) => response.request().method() === 'POST' && response.url().includes(`/signal/${signal}`),
  );
  await submit.click();
  const response = await answered;
  expect(response.status(), `the Web UI's ${signal} request was answered ${response.status()}`).toBe(200);
  expect(JSON.parse(response.request().postData() ?? '{}')).toMatchObject({ signalName: signal });
  await dialog.waitFor({ state: 'detached', timeout: 10_000 });
}
