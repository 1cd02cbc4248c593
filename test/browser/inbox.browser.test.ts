// The web inbox in real Chromium against a dev server and a worker: approvers enroll a passkey (Chrome's
// virtual authenticator), hold their Ed25519 keys in the browser, and decide; the turn verifies every
// signature and enforces who may decide on which tool. Each test counts the handlers' real runs.
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startInboxServer, type InboxServer } from '../../client/inbox/inbox-server';
import { TollgateClient } from '../../client/tollgate-client';
import { generateApproverKeyPair } from '../../common/approver-keys';
import type { TurnLineage, TurnState } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';
import { createActivities } from '../../activities';
import { openConfiguredStore } from '../../intents/open-store';
import { openSqlitePolicyStore } from '../../policies/policy-store';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { builtInTools } from '../../tools/built-in';
import { defineTool } from '../../tools/define-tool';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { approvalSignal } from '../../workflows/messages';
import { openaiStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { FOLDED_BODY, HARMLESS_CALL, HOSTILE_CALL, POSTSCRIPT } from '../helpers/display-cases';
import { HIDDEN_CHARACTER_PATTERN } from '../../common/display-text';
import { scripted, waitForState } from '../helpers/turn-runner';
import { CHROMIUM } from '../helpers/web-ui';

const OUTPUT = path.join(PROJECT_ROOT, 'test-output', 'inbox');
const DOCS_IMAGES = path.join(PROJECT_ROOT, 'docs', 'images');
const KEYS_ENV = 'TOLLGATE_INBOX_TEST_APPROVER_KEYS';

/** A payment service that applies each payment, then drops the connection: the turn cannot tell, and asks a person. */
const payments = { executions: 0 };
const payInvoice = defineTool({
  name: 'pay_invoice',
  description: 'Pays an invoice from the company account.',
  input: z.strictObject({
    invoice: z.string().describe('The invoice to pay.'),
    cents: z.number().int().min(1).describe('The amount, in cents.'),
  }),
  effect: 'irreversible_write',
  timeout: 2_000,
  handler: () => {
    payments.executions++;
    throw Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });
  },
});

/** A report filed with a partner: an irreversible write whose arguments fold (a long body, nine details). */
const reports = { executions: 0, last: undefined as unknown };
const fileReport = defineTool({
  name: 'file_report',
  description: 'Files a report with a partner.',
  input: z.strictObject({ to: z.string(), body: z.string(), details: z.record(z.string(), z.string()) }),
  effect: 'irreversible_write',
  timeout: 2_000,
  handler: (args) => {
    reports.executions++;
    reports.last = args;
    return 'filed';
  },
});

let server: DevServer;
let provider: FakeProvider;
let config: TollgateConfig;
let client: TollgateClient;
let inbox: InboxServer;
let browser: Browser;
let connection: NativeConnection | undefined;
let worker: TollgateWorker | undefined;
let running: Promise<void> | undefined;
const consoleErrors: string[] = [];
const people: Record<'alice' | 'bob', { context: BrowserContext; page: Page }> = {} as never;
let workspace: string;

/** A browser profile with a virtual passkey authenticator (CTAP2, resident keys, user verification), whose errors are collected. */
async function person(name: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL: inbox.url });
  const page = await context.newPage();
  page.on('console', (message) => message.type() === 'error' && consoleErrors.push(`${name}: ${message.text()}`));
  page.on('pageerror', (error) => consoleErrors.push(`${name}: ${error.message}`));
  page.on('response', (response) => response.status() >= 400 && consoleErrors.push(`${name}: ${response.status()} ${response.url()}`));
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { context, page };
}

/** Waits until `probe` returns `expected` (for the setup, where expect.poll cannot run). */
async function until<T>(probe: () => Promise<T>, expected: T, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await probe().catch(() => undefined);
    if (last === expected) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting until ${what} (last seen: ${String(last)}; browser errors: ${consoleErrors.join(' | ')})`);
}

/** Opens an enrollment link and creates the passkey; the page then shows the approver signed in. */
async function enroll(page: Page, approver: string): Promise<void> {
  await page.goto(inbox.enrollmentLink(approver));
  await page.getByRole('button', { name: 'Create my passkey' }).click();
  await until(() => page.getByTestId('approver').textContent({ timeout: 1_000 }), approver, `${approver} is signed in`);
}

async function pending(workflowId: string, ready: (state: TurnState) => boolean): Promise<TurnState> {
  return waitForState(client.client.workflow.getHandle(workflowId), ready);
}

/** Waits until the page lists an item of this turn, and opens it. */
async function open(page: Page, workflowId: string, kind: string): Promise<void> {
  const item = page.locator(`[data-item^="${kind}:${workflowId}:"]`);
  await item.waitFor({ timeout: 20_000 });
  await item.click();
  await page.getByTestId('digest').waitFor();
  if (kind !== 'resume') await expect.poll(() => page.getByText('matches what is shown here').count()).toBe(1);
}

function outboxFiles(taskId: string): string[] {
  const folder = path.join(workspace, 'outbox');
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.json') && path.basename(file).startsWith(`${taskId}.send_message.`));
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
  quietRuntime();
  mkdirSync(OUTPUT, { recursive: true });
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-inbox-'));
  workspace = path.join(folder, 'workspace');
  [server, provider] = await Promise.all([
    freePort().then((port) =>
      startDevServer({
        address: `127.0.0.1:${port}`,
        namespace: 'default',
        dbFile: path.join(folder, 'temporal.db'),
        logFile: path.join(folder, 'server.log'),
      }),
    ),
    startFakeProvider(),
  ]);
  config = testConfig({
    temporal: { address: server.address, taskQueue: 'inbox-browser' },
    workspace,
    store: { sqliteFile: path.join(folder, 'idempotency.db') },
    approvals: {
      publicKeysEnv: KEYS_ENV,
      groups: { send_message: ['alice', 'bob'], pay_invoice: ['alice'] },
      rules: [
        {
          name: 'team-notes',
          tool: 'send_message',
          when: { properties: { to: { const: 'team' }, subject: {}, body: {} } },
          decision: 'approve',
          limits: { perTask: 1 },
        },
      ],
    },
    outcomes: { onUnknown: 'ask' },
    model: { models: { scripted: { provider: 'scripted' }, gpt: { provider: 'openai', model: 'gpt-test', baseURL: provider.baseURL } } },
    inbox: { port: await freePort(), passkeysFile: path.join(folder, 'passkeys.json'), pollInterval: '300ms' },
  });
  client = await TollgateClient.connect(config);
  inbox = await startInboxServer({ config, client, log: () => undefined });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run'] });
  people.alice = await person('alice');
  people.bob = await person('bob');

  // Alice creates her key in her browser; Bob imports the one he was given.
  await enroll(people.alice.page, 'alice');
  await people.alice.page.getByRole('button', { name: 'Create a key in this browser' }).click();
  const aliceEntry = (await people.alice.page.getByTestId('public-entry').textContent())!.trim();
  await enroll(people.bob.page, 'bob');
  const bobKeys = generateApproverKeyPair('bob');
  await people.bob.page.getByRole('button', { name: 'Import a key' }).click();
  await people.bob.page.getByLabel('Private entry (name:base64)').fill(bobKeys.privateEntry);
  await people.bob.page.getByLabel('Public entry (name:base64)').fill(bobKeys.publicEntry);
  await people.bob.page.getByRole('button', { name: 'Import', exact: true }).click();
  await until(
    () => people.bob.page.getByTestId('public-entry').textContent({ timeout: 1_000 }),
    bobKeys.publicEntry,
    "Bob's key is imported",
  );

  // The worker takes both public keys (public keys are not secret); it reads them as it starts.
  process.env[KEYS_ENV] = `${aliceEntry},${bobKeys.publicEntry}`;
  connection = await NativeConnection.connect({ address: server.address });
  const activities = createActivities({
    config,
    store: openConfiguredStore(config),
    tools: [...builtInTools(config), payInvoice, fileReport],
    modelEnvironment: { env: { OPENAI_API_KEY: 'sk-test-openai-key' } },
  });
  worker = await createWorker({ config, connection, activities, workflowBundle: await bundleWorkflows() });
  running = worker.run();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await inbox?.close();
  if (running) {
    worker!.shutdown();
    await running;
  }
  await connection?.close();
  await client?.close();
  await provider?.close();
  await server?.stop();
});

describe('the web inbox', () => {
  it('signs in with a passkey only: a page without a session sees no item, and sign-out ends the session', async () => {
    const anonymous = await browser.newContext({ baseURL: inbox.url });
    const response = await anonymous.request.get('/api/items');
    expect(response.status()).toBe(401);
    await anonymous.close();
    const { page } = people.alice;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await expect.poll(() => page.getByTestId('approver').textContent(), { timeout: 15_000 }).toBe('alice');
  });

  it('shows a waiting send with everything needed to decide, and approving it there runs it once', async () => {
    const handle = await client.startTurn({ taskId: 'inbox-approve', prompt: 'Tell ops that the backup finished.' });
    await pending(handle.workflowId, (state) => state.pendingApprovals.length > 0);
    const { page } = people.alice;
    await open(page, handle.workflowId, 'approval');
    const detail = await page.locator('article').textContent();
    expect(detail).toContain('send_message');
    expect(detail).toContain('irreversible write');
    expect(detail).toContain('Tell ops that the backup finished.');
    expect(detail).toContain('alice, bob');
    expect(detail).toContain('in the Temporal Web UI');
    // An irreversible write is never run again by itself: the page says so, not "3 attempts at most".
    expect(detail).toContain('runs once, never again by itself');
    expect(detail).not.toContain('attempts at most');
    // The brief's body is folded: Approve waits until it was shown.
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    expect(await approve.isDisabled()).toBe(true);
    await page.screenshot({ path: path.join(OUTPUT, 'inbox-item.png'), fullPage: true });
    mkdirSync(DOCS_IMAGES, { recursive: true });
    await page.screenshot({ path: path.join(DOCS_IMAGES, 'inbox-item.png') });
    await page.getByRole('button', { name: 'Unfold everything' }).click();
    await expect.poll(() => approve.isDisabled()).toBe(false);
    await approve.click();
    await expect.poll(() => page.getByRole('status').textContent(), { timeout: 15_000 }).toContain('Sent: approve');
    const result = await client.result(handle.workflowId);
    expect(result.status).toBe('completed');
    const send = result.toolCalls.find((event) => event.tool === 'send_message')!;
    expect(send).toMatchObject({ status: 'success', executions: 1 });
    expect(outboxFiles('inbox-approve')).toHaveLength(1);
    expect((await client.state(handle.workflowId)).decisions).toEqual([
      expect.objectContaining({ decision: 'approve', approver: 'alice', keyId: 'alice' }),
    ]);
  });

  it('shows what a rule decided earlier in the turn, and why it did not decide the call that waits', async () => {
    const note = { tool: 'send_message', args: { to: 'team', subject: 'backup', body: 'The backup finished.' } };
    const handle = await client.startTurn({
      taskId: 'inbox-rules',
      prompt: 'Tell the team twice.',
      model: scripted([{ toolCalls: [note] }, { toolCalls: [{ ...note, args: { ...note.args, body: 'Really.' } }] }, { text: 'told' }]),
    });
    await pending(handle.workflowId, (state) => state.pendingApprovals.length > 0);
    const { page } = people.alice;
    await open(page, handle.workflowId, 'approval');
    expect(await page.getByTestId('decided').textContent()).toMatch(/send_message \(call-0-0\): approved by rule:team-notes/);
    expect(await page.getByTestId('policy-note').textContent()).toBe('rule team-notes approved its 1 calls for task inbox-rules');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const result = await client.result(handle.workflowId);
    expect(result.toolCalls.map((event) => [event.approval?.by, event.executions])).toEqual([
      ['rule:team-notes', 1],
      ['alice', 1],
    ]);
    expect(outboxFiles('inbox-rules')).toHaveLength(2);
  });

  it("gives a grant signed in the browser with an approval, which approves the task's next like call", async () => {
    const note = (body: string) => ({ tool: 'send_message', args: { to: 'ops', subject: 'backup', body } });
    const first = await client.startTurn({
      taskId: 'inbox-grant',
      prompt: 'Tell ops.',
      model: scripted([{ toolCalls: [note('The backup finished.')] }, { text: 'told' }]),
    });
    await pending(first.workflowId, (state) => state.pendingApprovals.length > 0);
    const { page } = people.alice;
    await open(page, first.workflowId, 'approval');
    await page.getByLabel(/also approve later calls of send_message in this task for/).selectOption('1');
    const condition = page.getByLabel(/Only calls whose arguments match/);
    await condition.fill('{"properties":{"to":{"const":"ops"');
    await expect.poll(() => page.getByTestId('grant-error').textContent()).toContain('not JSON');
    expect(await page.getByRole('button', { name: 'Approve', exact: true }).isDisabled()).toBe(true);
    await condition.fill('{"properties":{"to":{"const":"ops"},"subject":{},"body":{}}}');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    expect((await client.result(first.workflowId)).toolCalls[0].approval).toEqual({ decision: 'approve', by: 'alice', via: 'person' });
    const { grantId } = (await client.state(first.workflowId)).decisions[0];
    expect(grantId).toMatch(/^g-/);

    const second = await client.startTurn({
      taskId: 'inbox-grant',
      prompt: 'Tell ops again.',
      model: scripted([{ toolCalls: [note('The restore test passed.')] }, { text: 'told' }]),
    });
    const result = await client.result(second.workflowId);
    expect(result.toolCalls[0]).toMatchObject({ status: 'success', executions: 1, approval: { by: `grant:${grantId}`, via: 'grant' } });
    expect(outboxFiles('inbox-grant')).toHaveLength(2);
    const policies = openSqlitePolicyStore(config.store.sqliteFile);
    const [grant] = (await policies.listGrants({ at: Date.now() })).filter((entry) => entry.id === grantId);
    await policies.close();
    // Signed by Alice's key in her browser: the store keeps the key's name and the signature with the grant.
    expect(grant).toMatchObject({ grantedBy: 'alice', keyId: 'alice', scopeKey: 'task:inbox-grant', uses: 1 });
    expect(grant.signature).toMatch(/^[A-Za-z0-9+/]{86}==$/);
  });

  it('refuses an edit that breaks the schema in the page, and runs a valid edit with the edited arguments', async () => {
    const args = { to: 'ops', subject: 'backup', body: 'The backup finished.' };
    const handle = await client.startTurn({
      taskId: 'inbox-edit',
      prompt: 'Send the note.',
      model: scripted([{ toolCalls: [{ tool: 'send_message', args }] }, { text: 'sent' }]),
    });
    await pending(handle.workflowId, (state) => state.pendingApprovals.length > 0);
    const { page } = people.alice;
    await open(page, handle.workflowId, 'approval');
    await page.getByRole('button', { name: 'Edit the arguments' }).click();
    const editor = page.getByLabel(/The arguments the call is to run with instead/);
    await editor.fill(JSON.stringify({ ...args, to: 42 }, null, 2));
    await expect.poll(() => page.getByTestId('edit-errors').textContent()).toContain('/to');
    expect(await page.getByRole('button', { name: 'Approve with these arguments' }).isDisabled()).toBe(true);
    await editor.fill(JSON.stringify({ ...args, body: 'The backup finished at 02:00.' }, null, 2));
    await expect.poll(() => page.getByTestId('edit-diff').textContent()).toContain('02:00');
    await page.getByRole('button', { name: 'Approve with these arguments' }).click();
    const result = await client.result(handle.workflowId);
    expect(result.toolCalls[0]).toMatchObject({ tool: 'send_message', status: 'success', executions: 1 });
    const [file] = outboxFiles('inbox-edit');
    const { readFileSync } = await import('node:fs');
    expect(JSON.parse(readFileSync(path.join(workspace, 'outbox', file), 'utf8'))).toMatchObject({ body: 'The backup finished at 02:00.' });
  });

  it('resolves a payment whose outcome is unknown as applied: it is never run again', async () => {
    const before = payments.executions;
    const handle = await client.startTurn({
      taskId: 'inbox-resolve',
      prompt: 'Pay invoice 7.',
      model: scripted([{ toolCalls: [{ tool: 'pay_invoice', args: { invoice: 'INV-7', cents: 12_000 } }] }, { text: 'paid' }]),
    });
    await pending(handle.workflowId, (state) => state.pendingApprovals.length > 0);
    const { page } = people.alice;
    await open(page, handle.workflowId, 'approval');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await pending(handle.workflowId, (state) => (state.pendingResolutions ?? []).length > 0);
    await open(page, handle.workflowId, 'resolution');
    expect(await page.locator('article').textContent()).toContain('What the status check found');
    await page.getByRole('button', { name: 'It took effect (applied)' }).click();
    const result = await client.result(handle.workflowId);
    expect(result.toolCalls[0]).toMatchObject({ tool: 'pay_invoice', status: 'success' });
    expect(payments.executions - before).toBe(1);
    expect((await client.state(handle.workflowId)).resolutions).toEqual([
      expect.objectContaining({ outcome: 'applied', resolver: 'alice' }),
    ]);
  });

  it('shows the text a cut-off stream had sent, and asks the model again on a resume', async () => {
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 4 });
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['all ', 'done']) });
    const handle = await client.startTurn({ taskId: 'inbox-resume', prompt: 'Count.', model: 'gpt' });
    await pending(handle.workflowId, (state) => state.pendingResume !== undefined);
    const { page } = people.alice;
    const item = page.locator(`[data-item^="resume:${handle.workflowId}:"]`);
    await item.waitFor({ timeout: 20_000 });
    await item.click();
    await expect.poll(() => page.getByTestId('partial-text').textContent()).toContain('one two three');
    await page.getByRole('button', { name: 'Ask the model again' }).click();
    const result = await client.result(handle.workflowId);
    expect(result).toMatchObject({ status: 'completed', answer: 'all done' });
    expect(result.modelInterruptions).toEqual([expect.objectContaining({ decision: 'retry', by: 'alice' })]);
  });

  it('two approvers on one call: the one outside the tool’s group is refused by the turn, and the other’s approval shows as taken, by whom', async () => {
    const before = payments.executions;
    const handle = await client.startTurn({
      taskId: 'inbox-two',
      prompt: 'Pay invoice 8.',
      model: scripted([{ toolCalls: [{ tool: 'pay_invoice', args: { invoice: 'INV-8', cents: 500 } }] }, { text: 'done' }]),
    });
    await pending(handle.workflowId, (state) => state.pendingApprovals.length > 0);
    await open(people.bob.page, handle.workflowId, 'approval');
    await open(people.alice.page, handle.workflowId, 'approval');
    await people.bob.page.getByRole('button', { name: 'Approve', exact: true }).click();
    await expect
      .poll(() => people.bob.page.getByRole('alert').first().textContent())
      .toContain('bob may not decide on calls of pay_invoice: only alice may');
    expect(payments.executions).toBe(before);
    await people.alice.page.getByRole('button', { name: 'Deny', exact: true }).click();
    await expect.poll(() => people.bob.page.getByTestId('taken-notice').textContent(), { timeout: 20_000 }).toContain('deny by alice');
    const result = await client.result(handle.workflowId);
    expect(result.toolCalls[0]).toMatchObject({ tool: 'pay_invoice', status: 'denied', executions: 0 });
    expect(payments.executions).toBe(before);
  });

  it('changes nothing for a request without a session, a forged signature, or another origin', async () => {
    const args = { to: 'ops', subject: 'x', body: 'forged?' };
    const handle = await client.startTurn({
      taskId: 'inbox-hostile',
      prompt: 'x',
      model: scripted([{ toolCalls: [{ tool: 'send_message', args }] }, { text: 'x' }]),
    });
    const state = await pending(handle.workflowId, (current) => current.pendingApprovals.length > 0);
    const [call] = state.pendingApprovals;
    const decision = {
      callId: call.callId,
      decision: 'approve',
      approver: 'alice',
      argsDigest: call.argsDigest,
      keyId: 'alice',
      signedAt: new Date().toISOString(),
      signature: Buffer.alloc(64, 7).toString('base64'),
    };
    const body = { kind: 'approval', workflowId: handle.workflowId, decision };
    // No session: refused before anything is sent.
    const anonymous = await browser.newContext({ baseURL: inbox.url });
    const refused = await anonymous.request.post('/api/decide', { data: body, headers: { origin: inbox.url } });
    expect(refused.status()).toBe(401);
    await anonymous.close();
    const { page } = people.alice;
    const csrfToken = await page.evaluate(async () => ((await (await fetch('/api/session')).json()) as { csrfToken: string }).csrfToken);
    // Another origin, with the session's cookie and token: refused by the inbox.
    const crossOrigin = await page.request.post('/api/decide', {
      data: body,
      headers: { origin: 'http://evil.example', 'x-csrf-token': csrfToken },
    });
    expect(crossOrigin.status()).toBe(403);
    // No CSRF token: refused by the inbox.
    const noToken = await page.request.post('/api/decide', { data: body, headers: { origin: inbox.url } });
    expect(noToken.status()).toBe(403);
    // A forged signature from the signed-in page: the inbox forwards it, and the turn refuses it.
    const forged = await page.request.post('/api/decide', { data: body, headers: { origin: inbox.url, 'x-csrf-token': csrfToken } });
    expect(forged.status()).toBe(400);
    expect((await forged.json()).error).toMatch(/does not verify/);
    // And an unsigned signal straight to Temporal changes nothing either.
    await client.client.workflow
      .getHandle(handle.workflowId)
      .signal(approvalSignal, { callId: call.callId, decision: 'approve', approver: 'alice', argsDigest: call.argsDigest });
    const after = await pending(handle.workflowId, (current) => current.rejectedDecisions.length >= 1);
    expect(after.rejectedDecisions.at(-1)?.why).toMatch(/unsigned/);
    expect(after.pendingApprovals).toHaveLength(1);
    expect(after.decisions).toEqual([]);
    expect(outboxFiles('inbox-hostile')).toEqual([]);
    await client.client.workflow.getHandle(handle.workflowId).terminate('test over');
  });

  it('can be used with the keyboard alone', async () => {
    const handle = await client.startTurn({ taskId: 'inbox-keyboard', prompt: 'Tell ops by keyboard.' });
    await pending(handle.workflowId, (state) => state.pendingApprovals.length > 0);
    const { page } = people.alice;
    await page.reload();
    const item = page.locator(`[data-item^="approval:${handle.workflowId}:"]`);
    await item.waitFor({ timeout: 20_000 });
    await page.screenshot({ path: path.join(DOCS_IMAGES, 'inbox-list.png') });
    // Tab to the item, open it with Enter, then Tab to Approve and press it.
    for (let presses = 0; presses < 30 && !(await item.evaluate((element) => element === element.ownerDocument.activeElement)); presses++)
      await page.keyboard.press('Tab');
    expect(await item.evaluate((element) => element === element.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByText('matches what is shown here').count()).toBe(1);
    // The folded body is unfolded from the keyboard too, before Approve can take the focus.
    const unfold = page.getByRole('button', { name: 'Unfold everything' });
    for (let presses = 0; presses < 40 && !(await unfold.evaluate((element) => element === element.ownerDocument.activeElement)); presses++)
      await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    await expect.poll(() => approve.isDisabled()).toBe(false);
    for (
      let presses = 0;
      presses < 40 && !(await approve.evaluate((element) => element === element.ownerDocument.activeElement));
      presses++
    )
      await page.keyboard.press('Tab');
    expect(await approve.evaluate((element) => element === element.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    const result = await client.result(handle.workflowId);
    expect(result.toolCalls.find((event) => event.tool === 'send_message')).toMatchObject({ status: 'success', executions: 1 });
  });

  it('shows a hostile call and the harmless one it imitates so that they differ visibly, marked and with a warning', async () => {
    const start = (taskId: string, args: object) =>
      client.startTurn({
        taskId,
        prompt: 'Send the minutes.',
        model: scripted([{ toolCalls: [{ tool: 'send_message', args }] }, { text: 'sent' }]),
      });
    const hostile = await start('inbox-hostile-shown', HOSTILE_CALL);
    const harmless = await start('inbox-harmless-shown', HARMLESS_CALL);
    await pending(hostile.workflowId, (state) => state.pendingApprovals.length > 0);
    await pending(harmless.workflowId, (state) => state.pendingApprovals.length > 0);
    const { page } = people.alice;
    const hidden = new RegExp(HIDDEN_CHARACTER_PATTERN, 'u');
    await open(page, hostile.workflowId, 'approval');
    const hostileShown = await page.getByTestId('arguments').innerText();
    expect(await page.getByTestId('hidden-warning').innerText()).toContain(
      '55 hidden characters (2 bidi controls (reorder text), 53 tag characters',
    );
    expect(await page.locator('mark.hidden-char').count()).toBe(55);
    await page.screenshot({ path: path.join(OUTPUT, 'inbox-hostile.png'), fullPage: true });
    await open(page, harmless.workflowId, 'approval');
    const harmlessShown = await page.getByTestId('arguments').innerText();
    expect(await page.getByTestId('hidden-warning').count()).toBe(0);
    // The reversed recipient shows reversed and marked, the smuggled text as its marks; no hidden character reaches the page.
    expect(hostileShown).toContain('\\u{202E}moc.elpmaxe@bob\\u{202C}');
    expect(hostileShown).toContain('See you at ten.\\u{E0049}\\u{E0067}\\u{E006E}');
    expect(hostileShown).not.toMatch(hidden);
    expect(harmlessShown).toContain('"bob@example.com"');
    expect(hostileShown).not.toBe(harmlessShown);
    expect(hostileShown.length - harmlessShown.length).toBeGreaterThan(53 * 8);
    // The list marks the hostile item too.
    expect(await page.locator(`[data-item^="approval:${hostile.workflowId}:"] .warning-badge`).textContent()).toBe('hidden characters');
    expect(await page.locator(`[data-item^="approval:${harmless.workflowId}:"] .warning-badge`).count()).toBe(0);
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    // The page closes the item once the turn answered: the next one is opened after that.
    await expect.poll(() => page.getByRole('status').textContent(), { timeout: 15_000 }).toContain('Sent: approve');
    await open(page, hostile.workflowId, 'approval');
    await page.getByRole('button', { name: 'Deny', exact: true }).click();
    expect((await client.result(harmless.workflowId)).toolCalls[0]).toMatchObject({ status: 'success', executions: 1 });
    expect((await client.result(hostile.workflowId)).toolCalls[0]).toMatchObject({ status: 'denied', executions: 0 });
    expect(outboxFiles('inbox-harmless-shown')).toHaveLength(1);
    expect(outboxFiles('inbox-hostile-shown')).toEqual([]);
  });

  it('enables Approve only once a folded P.S. and nine folded fields were shown, and the approval runs the call once', async () => {
    const details = Object.fromEntries(
      Array.from({ length: 9 }, (_, index) => [`line${index}`, `detail ${index} of the report `.repeat(2)]),
    );
    const args = { to: 'partner@example.com', body: FOLDED_BODY, details };
    const handle = await client.startTurn({
      taskId: 'inbox-folded',
      prompt: 'File the report.',
      model: scripted([{ toolCalls: [{ tool: 'file_report', args }] }, { text: 'filed' }]),
    });
    await pending(handle.workflowId, (state) => state.pendingApprovals.length > 0);
    const { page } = people.alice;
    await open(page, handle.workflowId, 'approval');
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    const status = page.getByTestId('unfold-status');
    expect(await status.innerText()).toContain('0 of 2 folded parts unfolded');
    expect(await approve.isDisabled()).toBe(true);
    expect(await page.getByText(POSTSCRIPT).isVisible()).toBe(false);
    // An edit cannot go around the fold either.
    await page.getByRole('button', { name: 'Edit the arguments' }).click();
    await page.getByLabel(/The arguments the call is to run with instead/).fill(JSON.stringify({ ...args, to: 'partner@example.org' }));
    await page.getByTestId('edit-diff').waitFor();
    expect(await page.getByRole('button', { name: 'Approve with these arguments' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Edit the arguments' }).click();
    await page.getByText('369 characters (unfold)').click();
    await expect.poll(() => status.innerText()).toContain('1 of 2 folded parts unfolded');
    expect(await page.getByText(POSTSCRIPT).isVisible()).toBe(true);
    expect(await approve.isDisabled()).toBe(true);
    await page.getByText('9 fields (unfold)').click();
    await expect.poll(() => status.innerText()).toContain('All 2 folded parts were unfolded');
    expect(await approve.isDisabled()).toBe(false);
    const before = reports.executions;
    await approve.click();
    const result = await client.result(handle.workflowId);
    expect(result.toolCalls[0]).toMatchObject({ tool: 'file_report', status: 'success', executions: 1 });
    expect(reports.executions - before).toBe(1);
    expect(reports.last).toEqual(args);
  });

  it("shows a grandchild's approval with its lineage, and approving it there runs the write once in the grandchild", async () => {
    const taskId = 'inbox-subagents';
    const send = (body: string) => ({ toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'deposit', body } }] });
    const turn = (workflowId: string, body: string, lineage?: TurnLineage) =>
      client.client.workflow.start('agentTurn', {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId, prompt: `Send: ${body}`, model: scripted([send(body), { text: 'sent' }]), ...(lineage ? { lineage } : {}) }],
      });
    // A tree as delegate calls build it (child ids `<parent>-call-<callId>`): each turn waits on its own send.
    const root = await client.startTurn({ taskId, prompt: 'Look after the deposit.', model: scripted([send('root'), { text: 'sent' }]) });
    const childId = `${root.workflowId}-call-call-0-1`;
    const grandchildId = `${childId}-call-call-0-1`;
    const path = ['default', 'default', 'default'];
    const lineage = (workflowId: string, depth: number, request: string): TurnLineage => ({
      rootWorkflowId: root.workflowId,
      parentWorkflowId: workflowId,
      parentCallId: 'call-0-1',
      path: path.slice(0, depth + 1),
      request,
      depth,
    });
    const handles = [await turn(childId, 'child', lineage(root.workflowId, 1, 'Handle the deposit.'))];
    // The request as the parent's model wrote it, a right-to-left override in it: shown marked, never acted on.
    handles.push(await turn(grandchildId, 'grandchild', lineage(childId, 2, 'Tell ops \u202Etisoped\u202C is due.')));
    const waiting = await pending(root.workflowId, (state) => (state.waitsBelow ?? []).length === 2);
    expect(waiting.waitsBelow!.map((wait) => wait.workflowId).sort()).toEqual([childId, grandchildId].sort());

    const { page } = people.alice;
    await open(page, grandchildId, 'approval');
    expect(await page.locator(`[data-item^="approval:${grandchildId}:"]`).textContent()).toContain('subagent default → default → default');
    const shown = page.getByTestId('lineage');
    expect(await shown.textContent()).toContain('(depth 2), below the root turn');
    expect(await shown.textContent()).toContain(root.workflowId);
    const request = page.getByTestId('lineage-request');
    expect(await request.locator('mark.hidden-char').count()).toBe(2);
    expect(await request.textContent()).not.toContain('\u202E');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await expect.poll(() => page.getByRole('status').textContent(), { timeout: 15_000 }).toContain('Sent: approve');

    const result = await client.result(grandchildId);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success', executions: 1 })]);
    expect((await client.state(grandchildId)).decisions).toEqual([expect.objectContaining({ approver: 'alice', keyId: 'alice' })]);
    expect(outboxFiles(taskId)).toHaveLength(1);
    const after = await pending(root.workflowId, (state) => state.waitsBelow?.length === 1);
    expect(after.waitsBelow![0].workflowId).toBe(childId);
    for (const workflowId of [childId, root.workflowId]) await client.client.workflow.getHandle(workflowId).terminate('test over');
    expect(outboxFiles(taskId)).toHaveLength(1);
  });

  it('logged no console error and no content-security violation in either browser', () => {
    // Bob's approval outside his group (answered 400, with the turn's reason) is the one refusal a page met on purpose.
    const provoked = /Failed to load resource: the server responded with a status of 400|^bob: 400 http:\/\/localhost:\d+\/api\/decide$/;
    expect(consoleErrors.filter((line) => !provoked.test(line))).toEqual([]);
  });
});
