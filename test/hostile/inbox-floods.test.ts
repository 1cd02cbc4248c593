// The web inbox's server under floods and races (issue 44, items 6 and 9): looks without a cookie store
// no session, sign-in starts are capped and swept, bodies and live views are capped, and one enrollment
// link verified by two browsers at once enrolls exactly one passkey. Over plain HTTP, with a passkey
// authenticator in software; no Temporal server is needed (nothing here reaches a turn).
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { humanDuration, startInboxServer, type InboxServer } from '../../client/inbox/inbox-server';
import { CappedSessionStore } from '../../client/inbox/session-store';
import { TollgateClient } from '../../client/tollgate-client';
import type { TollgateConfig } from '../../config/config-schema';
import { freePort } from '../../connection/ports';
import { createPasskey, signIn, type SoftwarePasskey } from '../helpers/software-passkey';
import { testConfig } from '../helpers/test-config';

let config: TollgateConfig;
let connection: Connection;
let inbox: InboxServer;
let base: string;
let origin: string;
const logged: string[] = [];
let carol: SoftwarePasskey;

/** A browser's cookie jar, reduced to the inbox's one cookie. */
class Browser {
  cookie?: string;
  async request(
    method: 'GET' | 'POST',
    route: string,
    { body, headers = {}, signal }: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const response = await fetch(`${base}${route}`, {
      method,
      headers: {
        ...(method === 'POST' ? { origin, 'content-type': 'application/json' } : {}),
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      signal,
    });
    const set = response.headers.getSetCookie().find((line) => line.startsWith('tollgate_inbox='));
    if (set) this.cookie = set.split(';')[0];
    return response;
  }
  async json(method: 'GET' | 'POST', route: string, body?: unknown, headers?: Record<string, string>) {
    const response = await this.request(method, route, { body, headers });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> & { options?: { challenge: string } } };
  }
}

const party = () => ({ rpId: 'localhost', origin });

function passkeysOf(approver: string): unknown[] {
  const file = JSON.parse(readFileSync(config.inbox.passkeysFile, 'utf8')) as { approvers: Record<string, { passkeys: unknown[] }> };
  return file.approvers[approver]?.passkeys ?? [];
}

/** Enrolls a passkey through the link's token, as the page does. */
async function enroll(
  browser: Browser,
  token: string,
): Promise<{ status: number; body: Record<string, unknown>; passkey: SoftwarePasskey }> {
  const started = await browser.json('POST', '/api/enroll/options', { token });
  expect(started.status).toBe(200);
  const { passkey, response } = createPasskey({ ...party(), challenge: started.body.options!.challenge });
  const verified = await browser.json('POST', '/api/enroll/verify', { response });
  return { ...verified, passkey };
}

/** Signs in with a passkey, as the page does; the session's CSRF token. */
async function signedIn(browser: Browser, passkey: SoftwarePasskey): Promise<string> {
  const started = await browser.json('POST', '/api/sign-in/options', {});
  const verified = await browser.json('POST', '/api/sign-in/verify', {
    response: signIn(passkey, { ...party(), challenge: started.body.options!.challenge }),
  });
  expect(verified).toMatchObject({ status: 200, body: { approver: 'carol' } });
  return verified.body.csrfToken as string;
}

const tokenOf = (link: string) => link.slice(link.indexOf('#') + 1);

beforeAll(async () => {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-inbox-floods-'));
  const port = await freePort();
  config = testConfig({
    inbox: { port, passkeysFile: path.join(folder, 'passkeys.json'), maxEventStreams: 6, maxEventStreamsPerSession: 4 },
  });
  // A client that never connects: nothing in these tests reaches a turn.
  connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}` });
  const client = new TollgateClient(new Client({ connection, namespace: 'default' }), config);
  inbox = await startInboxServer({ config, client, enroll: ['carol'], log: (line) => logged.push(line) });
  base = `http://127.0.0.1:${port}`;
  origin = inbox.url;
  const enrolled = await enroll(new Browser(), tokenOf(inbox.enrollmentLinks.carol));
  expect(enrolled.status).toBe(200);
  carol = enrolled.passkey;
});

afterAll(async () => {
  await inbox?.close();
  await connection?.close();
});

describe('the web inbox under floods', () => {
  it('stores no session for 20,000 looks at /api/session without a cookie, and sets no cookie', async () => {
    const before = inbox.load().sessions.total;
    let cookies = 0;
    for (let batch = 0; batch < 200; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, async () => {
          const response = await fetch(`${base}/api/session`);
          if (response.headers.getSetCookie().length > 0) cookies++;
          expect(await response.json()).toMatchObject({ approver: null, csrfToken: null });
        }),
      );
    }
    expect(cookies).toBe(0);
    expect(inbox.load().sessions.total).toBe(before);
  });

  it('keeps at most 200 sign-ins under way however many start, stores none for another origin, and an approver still signs in', async () => {
    const refused = await Promise.all(
      Array.from({ length: 1_000 }, () =>
        new Browser().request('POST', '/api/sign-in/options', { body: {}, headers: { origin: 'http://evil.example' } }),
      ),
    );
    expect(new Set(refused.map((response) => response.status))).toEqual(new Set([403]));
    expect(inbox.load().sessions.pending).toBe(0);
    for (let batch = 0; batch < 10; batch++) {
      const started = await Promise.all(
        Array.from({ length: 100 }, () => new Browser().request('POST', '/api/sign-in/options', { body: {} })),
      );
      expect(new Set(started.map((response) => response.status))).toEqual(new Set([200]));
    }
    expect(inbox.load().sessions.pending).toBe(200);
    // Carol's sign-in, started after the flood, is among those kept.
    const browser = new Browser();
    const csrfToken = await signedIn(browser, carol);
    expect(csrfToken).toEqual(expect.any(String));
    expect((await browser.json('GET', '/api/session')).body).toMatchObject({ approver: 'carol', csrfToken: expect.any(String) });
  });

  it('sweeps sign-ins left unfinished and sessions past their expiry', () => {
    let now = 0;
    const store = new CappedSessionStore({ maxSignedIn: 2, maxPending: 2, pendingMs: 1_000, signedInMs: 10_000, now: () => now });
    const done = () => undefined;
    store.set('a', {}, done);
    store.set('b', { approver: 'carol', cookie: { expires: new Date(5_000) } }, done);
    store.set('c', { approver: 'dave' }, done);
    store.set('d', { approver: 'erin' }, done);
    expect(store.size).toEqual({ signedIn: 2, pending: 1, total: 3 });
    now = 1_000;
    store.sweep();
    expect(store.size).toEqual({ signedIn: 2, pending: 0, total: 2 });
    now = 10_000;
    let found: unknown = 'unset';
    store.get('c', (_error, session) => (found = session));
    expect(found).toBe(null);
    store.sweep();
    expect(store.size.total).toBe(0);
    store.close();
  });

  it('refuses request bodies past their caps before reading them: 64 KiB for sign-in, 1 MiB for a decision', async () => {
    const tooLarge = await new Browser().request('POST', '/api/sign-in/options', { body: { padding: 'x'.repeat(70 * 1024) } });
    expect(tooLarge.status).toBe(413);
    const browser = new Browser();
    const csrfToken = await signedIn(browser, carol);
    const decision = (size: number) => ({ kind: 'approval', workflowId: 'turn-x', decision: { callId: 'c', padding: 'x'.repeat(size) } });
    const huge = await browser.request('POST', '/api/decide', { body: decision(1_100 * 1024), headers: { 'x-csrf-token': csrfToken } });
    expect(huge.status).toBe(413);
    const large = await browser.request('POST', '/api/decide', { body: decision(900 * 1024), headers: { 'x-csrf-token': csrfToken } });
    expect(large.status).toBe(400);
  });

  it('caps live views per sign-in (4) and in all (6), and takes new ones once others close', async () => {
    const first = new Browser();
    await signedIn(first, carol);
    const second = new Browser();
    await signedIn(second, carol);
    const open = async (browser: Browser) => {
      const abort = new AbortController();
      const response = await browser.request('GET', '/api/events', { signal: abort.signal });
      if (response.status !== 200) await response.body?.cancel();
      // The response stays referenced while the view is open: fetch closes the stream of a response
      // the garbage collector took, which ended a live view early (and let a fifth one in) now and then.
      return { status: response.status, response, close: () => abort.abort() };
    };
    const views = [];
    for (let view = 0; view < 4; view++) views.push(await open(first));
    expect(views.map((view) => view.status)).toEqual([200, 200, 200, 200]);
    const fifth = await open(first);
    expect(fifth.status).toBe(429);
    views.push(await open(second), await open(second));
    expect(views.map((view) => view.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(inbox.load().eventStreams).toBe(6);
    expect((await open(second)).status).toBe(429);
    for (const view of views.slice(0, 4)) view.close();
    await expect.poll(() => inbox.load().eventStreams).toBe(2);
    const again = await open(second);
    expect(again.status).toBe(200);
    for (const view of [...views.slice(4), again]) view.close();
    await expect.poll(() => inbox.load().eventStreams).toBe(0);
  });
});

describe('one enrollment link', () => {
  it('verified by two browsers at once enrolls exactly one passkey, ten times over', async () => {
    for (let round = 0; round < 10; round++) {
      const approver = `racer${round}`;
      const token = tokenOf(inbox.enrollmentLink(approver));
      const [left, right] = [new Browser(), new Browser()];
      const started = await Promise.all([left, right].map((browser) => browser.json('POST', '/api/enroll/options', { token })));
      expect(started.map((answer) => answer.status)).toEqual([200, 200]);
      const responses = started.map((answer) => createPasskey({ ...party(), challenge: answer.body.options!.challenge }).response);
      const verified = await Promise.all([
        left.json('POST', '/api/enroll/verify', { response: responses[0] }),
        right.json('POST', '/api/enroll/verify', { response: responses[1] }),
      ]);
      expect(verified.map((answer) => answer.status).sort()).toEqual([200, 400]);
      expect(verified.find((answer) => answer.status === 400)!.body.error).toBe('the enrollment link is not valid, or was used already');
      expect(passkeysOf(approver)).toHaveLength(1);
      // And a third browser, later, is refused at the start.
      expect((await new Browser().json('POST', '/api/enroll/options', { token })).status).toBe(400);
    }
  });

  it('is printed with its lifetime as people say it', () => {
    expect(logged).toEqual([expect.stringMatching(/^Enrollment link for carol \(once, for 15 minutes\): http:\/\/localhost:\d+\/enroll#/)]);
    expect([humanDuration(900_000), humanDuration(3_600_000), humanDuration(90_000), humanDuration(1_500)]).toEqual([
      '15 minutes',
      '1 hour',
      '90 seconds',
      '2 seconds',
    ]);
  });
});
