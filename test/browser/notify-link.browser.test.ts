// A notification's link followed in real Chromium: a turn's irreversible write waits, the worker's
// route tells an e-mail channel, a real SMTP server on loopback (smtp-server, STARTTLS, signed in)
// takes the mail and mailparser reads it back; the browser opens the mail's link to the web inbox,
// which asks to sign in first, then shows exactly that item and who was told. Following the link
// decides nothing: the write runs once, when the person approves it there.
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createActivities } from '../../activities';
import { startInboxServer, type InboxServer } from '../../client/inbox/inbox-server';
import { TollgateClient } from '../../client/tollgate-client';
import { generateApproverKeyPair } from '../../common/approver-keys';
import type { TurnState } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { freePort } from '../../connection/ports';
import { openConfiguredStore } from '../../intents/open-store';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { defineTool } from '../../tools/define-tool';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { selfSignedCertificate, startSmtpReceiver, type ReceivedMail, type SmtpReceiver } from '../helpers/smtp-receiver';
import { createPasskey, type SoftwarePasskey } from '../helpers/software-passkey';
import { testConfig } from '../helpers/test-config';
import { scripted, waitForState } from '../helpers/turn-runner';
import { CHROMIUM } from '../helpers/web-ui';

// The worker reads these when it starts: the approver's public key and the SMTP sign-in.
const KEYS_ENV = 'TOLLGATE_NOTIFY_LINK_TEST_APPROVER_KEYS';
const SMTP_USER_ENV = 'TOLLGATE_NOTIFY_LINK_TEST_SMTP_USER';
const SMTP_PASSWORD_ENV = 'TOLLGATE_NOTIFY_LINK_TEST_SMTP_PASSWORD';
const SMTP_USERS = { 'tollgate-notify': 'smtp-link-test-password-8841' };

/** An irreversible write whose real runs are counted. */
const sends = { executions: 0, last: undefined as unknown };
const sendEmail = defineTool({
  name: 'send_email',
  description: 'Sends an e-mail to a customer.',
  input: z.strictObject({ to: z.string(), subject: z.string(), body: z.string() }),
  effect: 'irreversible_write',
  timeout: 5_000,
  handler: (args) => {
    sends.executions++;
    sends.last = args;
    return 'sent';
  },
});

let server: DevServer;
let smtp: SmtpReceiver;
let config: TollgateConfig;
let client: TollgateClient;
let inbox: InboxServer;
let browser: Browser;
let connection: NativeConnection | undefined;
let worker: TollgateWorker | undefined;
let running: Promise<void> | undefined;
let passkey: SoftwarePasskey;
let userHandle: string;
const aliceKeys = generateApproverKeyPair('alice');
const consoleErrors: string[] = [];

/** The inbox as a passkey is bound to it: its host name and its origin. */
const party = () => ({ rpId: new URL(inbox.url).hostname, origin: inbox.url });

/**
 * Enrolls Alice's passkey through a one-time link over HTTP, as her device would, with the software
 * authenticator, in a browser context of its own (so that the browser that follows the mail's link
 * starts signed out). Returns the passkey and the user handle the inbox gave it.
 */
async function enrollAlice(): Promise<{ passkey: SoftwarePasskey; userHandle: string }> {
  const link = inbox.enrollmentLink('alice');
  const token = link.slice(link.indexOf('#') + 1);
  const device = await browser.newContext({ baseURL: inbox.url });
  try {
    const headers = { origin: inbox.url };
    const started = await device.request.post('/api/enroll/options', { data: { token }, headers });
    expect(started.status()).toBe(200);
    const { options } = (await started.json()) as { options: { challenge: string; user: { id: string } } };
    const created = createPasskey({ ...party(), challenge: options.challenge });
    const verified = await device.request.post('/api/enroll/verify', { data: { response: created.response }, headers });
    expect(verified.status()).toBe(200);
    expect(await verified.json()).toMatchObject({ approver: 'alice' });
    return { passkey: created.passkey, userHandle: options.user.id };
  } finally {
    await device.close();
  }
}

/**
 * A browser profile whose authenticator (Chrome's virtual one) holds Alice's software passkey, so
 * that the page's own "Sign in with a passkey" signs in with it; its errors are collected.
 */
async function aliceBrowser(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL: inbox.url });
  const page = await context.newPage();
  page.on('console', (message) => message.type() === 'error' && consoleErrors.push(message.text()));
  page.on('pageerror', (error) => consoleErrors.push(error.message));
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  await cdp.send('WebAuthn.addCredential', {
    authenticatorId,
    credential: {
      credentialId: Buffer.from(passkey.id, 'base64url').toString('base64'),
      isResidentCredential: true,
      rpId: party().rpId,
      privateKey: passkey.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
      userHandle: Buffer.from(userHandle, 'base64url').toString('base64'),
      signCount: passkey.counter,
    },
  });
  return { context, page };
}

async function waitingState(workflowId: string, ready: (state: TurnState) => boolean): Promise<TurnState> {
  return waitForState(client.client.workflow.getHandle(workflowId), ready);
}

/** Waits until the SMTP server took a mail about this turn. */
async function mailAbout(workflowId: string): Promise<ReceivedMail> {
  await expect
    .poll(() => smtp.mails.filter((mail) => mail.parsed.text?.includes(`Turn: ${workflowId}`)).length, { timeout: 30_000 })
    .toBe(1);
  return smtp.mails.find((mail) => mail.parsed.text?.includes(`Turn: ${workflowId}`))!;
}

/** Starts a turn whose one call, a send_email, waits for approval. */
async function startWaitingSend(taskId: string, to: string): Promise<{ workflowId: string; state: TurnState }> {
  const args = { to, subject: 'Your refund', body: `Your refund for ${taskId} was approved.` };
  const { workflowId } = await client.startTurn({
    taskId,
    prompt: `Tell ${to} about the refund.`,
    model: scripted([{ toolCalls: [{ tool: 'send_email', args }] }, { text: 'sent' }]),
  });
  // The notification's receipt comes back on the waiting entry once the mail was taken.
  const state = await waitingState(workflowId, (current) => current.pendingApprovals[0]?.notifications?.[0]?.status === 'sent');
  return { workflowId, state };
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-notify-link-'));
  const certificate = selfSignedCertificate();
  [server, smtp] = await Promise.all([
    freePort().then((port) =>
      startDevServer({
        address: `127.0.0.1:${port}`,
        namespace: 'default',
        dbFile: path.join(folder, 'temporal.db'),
        logFile: path.join(folder, 'server.log'),
      }),
    ),
    startSmtpReceiver({ tls: certificate, users: SMTP_USERS }),
  ]);
  const inboxPort = await freePort();
  config = testConfig({
    temporal: { address: server.address, taskQueue: 'notify-link-browser' },
    workspace: path.join(folder, 'workspace'),
    store: { sqliteFile: path.join(folder, 'idempotency.db') },
    approvals: {
      publicKeysEnv: KEYS_ENV,
      groups: { send_email: ['alice'] },
      notify: {
        channels: {
          'ops-mail': {
            type: 'email',
            to: ['ops@example.com'],
            from: 'tollgate@example.com',
            smtp: {
              host: '127.0.0.1',
              port: smtp.port,
              secure: 'starttls',
              caFile: certificate.certFile,
              userEnv: SMTP_USER_ENV,
              passwordEnv: SMTP_PASSWORD_ENV,
            },
            timeout: '5s',
          },
        },
        routes: [{ tools: ['send_email'], channels: ['ops-mail'] }],
      },
    },
    inbox: {
      port: inboxPort,
      publicUrl: `http://localhost:${inboxPort}`,
      passkeysFile: path.join(folder, 'passkeys.json'),
      pollInterval: '300ms',
    },
  });
  client = await TollgateClient.connect(config);
  inbox = await startInboxServer({ config, client, log: () => undefined });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run'] });
  ({ passkey, userHandle } = await enrollAlice());

  process.env[KEYS_ENV] = aliceKeys.publicEntry;
  const [[user, password]] = Object.entries(SMTP_USERS);
  process.env[SMTP_USER_ENV] = user;
  process.env[SMTP_PASSWORD_ENV] = password;
  connection = await NativeConnection.connect({ address: server.address });
  const activities = createActivities({ config, store: openConfiguredStore(config), tools: [sendEmail] });
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
  await server?.stop();
  await smtp?.close();
  for (const name of [KEYS_ENV, SMTP_USER_ENV, SMTP_PASSWORD_ENV]) delete process.env[name];
});

describe("a notification's link to the web inbox", () => {
  it('the mail names the call and links to its item; the link asks to sign in, then shows that item; only the approval there runs it, once', async () => {
    // Another turn waits on the same tool: the link must open its own item, not the first one listed.
    const other = await startWaitingSend('refund-other', 'someone-else@example.com');
    const { workflowId, state } = await startWaitingSend('refund-7', 'customer@example.com');
    const [pending] = state.pendingApprovals;
    expect(pending.notifications).toEqual([
      expect.objectContaining({ channel: 'ops-mail', status: 'sent', kind: 'approval', attempts: 1 }),
    ]);

    // The publicUrl is the inbox's own address, and the link the turn built points into it.
    expect(inbox.url).toBe(config.inbox.publicUrl);
    const expectedLink = `${inbox.url}/#/item/${encodeURIComponent(workflowId)}/${encodeURIComponent(pending.callId)}`;
    const mail = await mailAbout(workflowId);
    const { parsed } = mail;
    expect(mail.user).toBe('tollgate-notify');
    expect(mail.to).toEqual(['ops@example.com']);
    expect(parsed.subject).toBe('[Tollgate] Approval needed: send_email — task refund-7');
    expect(parsed.messageId).toBe(`<${pending.notifications![0].id}@example.com>`);
    const text = parsed.text!;
    for (const line of [
      'Tool: send_email',
      'Task: refund-7',
      `Turn: ${workflowId}`,
      `Call: ${pending.callId} (round 1)`,
      'Who may decide: alice',
    ])
      expect(text).toContain(line);
    expect(text).toContain(`Open the item: ${expectedLink}\n`);
    expect(text).toContain('Following the link decides nothing');
    // The arguments stay out of a mail whose channel is not marked to carry them.
    expect(text).not.toContain('customer@example.com');
    const html = parsed.html as string;
    for (const cell of [
      '<th align="left">Tool</th><td>send_email</td>',
      '<td>refund-7</td>',
      '<th align="left">Who may decide</th><td>alice</td>',
    ])
      expect(html).toContain(cell);
    const hrefs = [...html.matchAll(/<a href="([^"]+)"/g)].map((match) => match[1].replaceAll('&amp;', '&'));
    expect(hrefs).toEqual([expectedLink]);
    const link = hrefs[0];

    // Chromium follows the link, signed out: the page asks to sign in and shows no item.
    const { context, page } = await aliceBrowser();
    await page.goto(link);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    expect(await page.locator('article').count()).toBe(0);
    expect(await page.getByTestId('approver').count()).toBe(0);
    expect(await page.textContent('body')).not.toContain('send_email');
    expect((await context.request.get('/api/items')).status()).toBe(401);
    // Nothing ran, nothing was decided: the call still waits.
    let now = await client.state(workflowId);
    expect(now.pendingApprovals.map((entry) => entry.callId)).toEqual([pending.callId]);
    expect([now.decisions, now.rejectedDecisions, sends.executions]).toEqual([[], [], 0]);

    // Signed in with the passkey, the page opens exactly the linked item: its tool, arguments, and who was told.
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await expect.poll(() => page.getByTestId('approver').textContent(), { timeout: 15_000 }).toBe('alice');
    const article = page.locator('article');
    await expect.poll(() => article.count(), { timeout: 20_000 }).toBe(1);
    expect(await page.locator('#detail-heading').textContent()).toBe('send_email: waits for approval');
    const detail = (await article.textContent())!;
    expect(detail).toContain('refund-7');
    expect(detail).toContain(workflowId);
    expect(detail).not.toContain('refund-other');
    expect(await page.getByTestId('arguments').innerText()).toContain('"customer@example.com"');
    expect(await page.getByTestId('arguments').innerText()).not.toContain('someone-else@example.com');
    expect(await page.getByTestId('notifications').innerText()).toMatch(/^approval to ops-mail: sent \d+ s ago$/);
    await expect.poll(() => page.getByText('matches what is shown here').count()).toBe(1);
    // The list still shows both waiting calls; only the linked one is open.
    expect(await page.locator(`[data-item^="approval:${other.workflowId}:"]`).count()).toBe(1);
    expect(await page.locator(`[data-item^="approval:${workflowId}:"]`).getAttribute('aria-current')).toBe('true');
    // Opening it again (the link followed a second time, signed in) decides nothing either.
    await page.goto(link);
    await expect.poll(() => page.locator('#detail-heading').textContent(), { timeout: 20_000 }).toBe('send_email: waits for approval');
    now = await client.state(workflowId);
    expect(now.pendingApprovals.map((entry) => entry.callId)).toEqual([pending.callId]);
    expect([now.decisions, now.rejectedDecisions, sends.executions]).toEqual([[], [], 0]);

    // Alice's signing key is imported into this browser; approving there runs the write once.
    await page.getByRole('button', { name: 'Import a key' }).click();
    await page.getByLabel('Private entry (name:base64)').fill(aliceKeys.privateEntry);
    await page.getByLabel('Public entry (name:base64)').fill(aliceKeys.publicEntry);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await expect.poll(() => page.getByTestId('public-entry').textContent()).toBe(aliceKeys.publicEntry);
    expect(await page.locator('#detail-heading').textContent()).toBe('send_email: waits for approval');
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    await expect.poll(() => approve.isDisabled()).toBe(false);
    await approve.click();
    await expect.poll(() => page.getByRole('status').textContent(), { timeout: 15_000 }).toContain('Sent: approve');
    const result = await client.result(workflowId);
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_email', status: 'success', executions: 1 })]);
    expect(sends.executions).toBe(1);
    expect(sends.last).toEqual({ to: 'customer@example.com', subject: 'Your refund', body: 'Your refund for refund-7 was approved.' });
    expect((await client.state(workflowId)).decisions).toEqual([
      expect.objectContaining({ decision: 'approve', approver: 'alice', keyId: 'alice' }),
    ]);
    // One mail per waiting call: none more after the decision, and the other turn still waits, untouched.
    expect(smtp.mails).toHaveLength(2);
    expect((await client.state(other.workflowId)).pendingApprovals).toHaveLength(1);
    await client.client.workflow.getHandle(other.workflowId).terminate('test over');
    expect(consoleErrors).toEqual([]);
    await context.close();
  });
});
