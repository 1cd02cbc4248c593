// `tollgate inbox --web`: the page where people decide. A Fastify application over the client SDK:
// it signs people in with passkeys, lists what waits for a person across turns (and pushes changes
// as server-sent events), and forwards decisions the page signed with the approver's own key. It can
// neither make nor change a signature: the turn verifies each one against the approvers' public keys.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TollgateConfig } from '../../config/config-schema';
import { toMilliseconds } from '../../common/duration';
import type { TollgateClient } from '../tollgate-client';
import { InboxItems, type InboxSnapshot } from './inbox-items';
import { newUserId, PasskeyBook, PasskeyError } from './passkeys';
import { CappedSessionStore, SESSION_STORE_DEFAULTS } from './session-store';
import { forwardDecision, DecisionRefused } from './forward-decision';
import { vendorModules, importMap } from './vendor-modules';

/** The folder of the page's own files. */
const PUBLIC = path.join(__dirname, 'public');

/** What the inbox server is started with. */
export interface InboxServerOptions {
  config: TollgateConfig;
  client: TollgateClient;
  /** Approvers to print a one-time enrollment link for. */
  enroll?: string[];
  /** Where the lines for the operator go (the enrollment links). */
  log?: (line: string) => void;
}

/** A running inbox: its address, the enrollment links made at start, and how to stop it. */
export interface InboxServer {
  url: string;
  enrollmentLinks: Record<string, string>;
  /** Makes another one-time enrollment link (e.g. from a test, or a later `--enroll`). */
  enrollmentLink(approver: string): string;
  /** How many sessions are stored (signed in, and sign-ins or enrollments under way), and how many event streams are open. */
  load(): { sessions: { signedIn: number; pending: number; total: number }; eventStreams: number };
  close(): Promise<void>;
}

/** The largest request body taken: sign-ins, enrollments, sign-out (a passkey's answer is a few kilobytes). */
export const BODY_LIMIT_BYTES = 64 * 1024;
/** The largest decision taken (it may carry edited arguments). */
export const DECISION_BODY_LIMIT_BYTES = 1024 * 1024;

/** A duration as people say it: `15 minutes`, `1 hour`, `90 seconds`. */
export function humanDuration(ms: number): string {
  const units: Array<[string, number]> = [
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
    ['second', 1_000],
  ];
  for (const [unit, size] of units) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}${ms === size ? '' : 's'}`;
  }
  return ms >= 1_000 ? `${Math.round(ms / 1_000)} seconds` : `${ms} ms`;
}

interface SessionData {
  approver?: string;
  challenge?: string;
  enrollment?: { token: string; userId: string };
  signedInAt?: number;
}

declare module 'fastify' {
  // The session's fields, as @fastify/session declares sessions to be extended.
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Session extends SessionData {}
}

/**
 * The origin people's browsers use: the config's `publicUrl`, else the listening address, named
 * `localhost` on a loopback address (a passkey is bound to a domain name, never to an IP address).
 */
function publicOrigin(config: TollgateConfig): URL {
  const { inbox } = config;
  if (inbox.publicUrl) return new URL(inbox.publicUrl);
  const loopback = ['127.0.0.1', '::1', 'localhost'].includes(inbox.host);
  const host = loopback ? 'localhost' : inbox.host.includes(':') ? `[${inbox.host}]` : inbox.host;
  return new URL(`http://${host}:${inbox.port}`);
}

/** The Web UI the turn links point at. */
function webUiUrl(config: TollgateConfig): string {
  return (config.inbox.webUiUrl ?? `http://${config.temporal.devServer.ip}:${config.temporal.devServer.uiPort}`).replace(/\/$/, '');
}

/** The session secret: from the configured variable, or made for this run. */
function sessionSecret(config: TollgateConfig, env: NodeJS.ProcessEnv): string {
  const name = config.inbox.sessionKeyEnv;
  if (!name) return randomBytes(32).toString('base64');
  const value = env[name];
  if (!value || Buffer.from(value, 'base64').length < 32) {
    throw new Error(`inbox.sessionKeyEnv: ${name} must hold at least 32 bytes in base64 (openssl rand -base64 32)`);
  }
  return value;
}

/** Starts the inbox; resolves once it listens. */
export async function startInboxServer({ config, client, enroll = [], log = console.log }: InboxServerOptions): Promise<InboxServer> {
  // Loaded here: the CLI's other commands need none of the web stack.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const fastify = require('fastify') as typeof import('fastify');
  const cookie = require('@fastify/cookie') as typeof import('@fastify/cookie');
  const session = require('@fastify/session') as typeof import('@fastify/session');
  const csrf = require('@fastify/csrf-protection') as typeof import('@fastify/csrf-protection');
  const helmet = require('@fastify/helmet') as typeof import('@fastify/helmet');
  const staticFiles = require('@fastify/static') as typeof import('@fastify/static');
  /* eslint-enable @typescript-eslint/no-require-imports */

  const origin = publicOrigin(config);
  const secure = origin.protocol === 'https:';
  const sessionMs = toMilliseconds(config.inbox.sessionTimeout);
  const passkeys = new PasskeyBook(config.inbox.passkeysFile, {
    origin: origin.origin,
    id: origin.hostname,
    name: 'Tollgate inbox',
  });
  const items = new InboxItems({ client, config, pollMs: toMilliseconds(config.inbox.pollInterval), webUiUrl: webUiUrl(config) });
  const modules = vendorModules();
  // The import map goes in as one exact text, whose hash the content security policy allows.
  const page = readFileSync(path.join(PUBLIC, 'index.html'), 'utf8').replace(
    /<script type="importmap">[\s\S]*?<\/script>/,
    () => `<script type="importmap">${importMap(modules)}</script>`,
  );
  const importMapHash = `'sha256-${createHash('sha256').update(importMap(modules)).digest('base64')}'`;

  const app: FastifyInstance = fastify.default({ logger: false, bodyLimit: BODY_LIMIT_BYTES, trustProxy: false });
  await app.register(helmet.default, {
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'", importMapHash],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        frameAncestors: ["'none'"],
        formAction: ["'self'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
        upgradeInsecureRequests: secure ? [] : null,
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    crossOriginOpenerPolicy: { policy: 'same-origin' },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    strictTransportSecurity: secure,
  });
  await app.register(cookie.default);
  // Bounded and swept: a session is stored only once a sign-in or an enrollment starts, and those are few and short-lived.
  const sessions = new CappedSessionStore({ ...SESSION_STORE_DEFAULTS, signedInMs: sessionMs });
  await app.register(session.default, {
    secret: sessionSecret(config, process.env),
    cookieName: 'tollgate_inbox',
    store: sessions as never,
    saveUninitialized: false,
    cookie: { httpOnly: true, sameSite: 'strict', secure, path: '/', maxAge: sessionMs },
  });
  await app.register(csrf.default, { sessionPlugin: '@fastify/session', getToken: (request) => request.headers['x-csrf-token'] as string });
  await app.register(staticFiles.default, { root: PUBLIC, prefix: '/static/', index: false, wildcard: true });
  for (const module of modules) {
    await app.register(staticFiles.default, { root: module.folder, prefix: module.prefix, decorateReply: false, index: false });
  }

  // Only the inbox's own host names are answered (a page elsewhere that rebinds a name to this address gets nothing).
  const hosts = new Set([origin.host, `127.0.0.1:${config.inbox.port}`, `localhost:${config.inbox.port}`, `[::1]:${config.inbox.port}`]);
  app.addHook('onRequest', async (request, reply) => {
    if (!hosts.has(String(request.headers.host))) return reply.code(421).send({ error: 'this host name is not served here' });
    // A request that changes anything comes from the inbox's own page: its Origin, JSON, and the session's CSRF token.
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      if (request.headers.origin !== origin.origin) return reply.code(403).send({ error: 'requests are taken only from the inbox page' });
      if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) {
        return reply.code(415).send({ error: 'send JSON' });
      }
    }
    return undefined;
  });

  const signedIn = (request: FastifyRequest): string | undefined => {
    const { approver, signedInAt } = request.session;
    if (!approver || signedInAt === undefined || Date.now() - signedInAt > sessionMs) return undefined;
    return approver;
  };
  const requireApprover = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!signedIn(request)) return reply.code(401).send({ error: 'sign in first' });
    return undefined;
  };
  const failure = (reply: FastifyReply, error: unknown) => {
    if (PasskeyError.isInstance(error) || DecisionRefused.isInstance(error)) return reply.code(400).send({ error: error.message });
    throw error;
  };

  app.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(page));
  app.get('/enroll', async (_request, reply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(page));

  app.get('/api/session', async (request, reply) => {
    const approver = signedIn(request);
    // Only a signed-in session gets a CSRF token: making one stores a session, which a page that only looks must not do
    // (any page on the web may send this request). Sign-in and enrollment are guarded by the Origin check and their challenge.
    const csrfToken = approver ? reply.generateCsrf() : null;
    return { approver: approver ?? null, csrfToken, webUiUrl: webUiUrl(config), namespace: config.temporal.namespace };
  });

  app.post('/api/enroll/options', async (request, reply) => {
    try {
      const { token } = request.body as { token?: unknown };
      const approver = passkeys.enrollmentFor(token);
      const options = await passkeys.registrationOptions(approver);
      request.session.challenge = options.challenge;
      request.session.enrollment = { token: token as string, userId: options.user.id || newUserId() };
      return { approver, options };
    } catch (error) {
      return failure(reply, error);
    }
  });

  app.post('/api/enroll/verify', async (request, reply) => {
    try {
      const { challenge, enrollment } = request.session;
      if (!challenge || !enrollment) throw new PasskeyError('start the enrollment again');
      const approver = await passkeys.register({
        token: enrollment.token,
        response: (request.body as { response: never }).response,
        challenge,
        userId: enrollment.userId,
      });
      await request.session.regenerate();
      Object.assign(request.session, { approver, signedInAt: Date.now() });
      return { approver, csrfToken: reply.generateCsrf() };
    } catch (error) {
      return failure(reply, error);
    }
  });

  app.post('/api/sign-in/options', async (request) => {
    const options = await passkeys.authenticationOptions();
    request.session.challenge = options.challenge;
    return { options };
  });

  app.post('/api/sign-in/verify', async (request, reply) => {
    try {
      const { challenge } = request.session;
      if (!challenge) throw new PasskeyError('start the sign-in again');
      const approver = await passkeys.authenticate({ response: (request.body as { response: never }).response, challenge });
      await request.session.regenerate();
      Object.assign(request.session, { approver, signedInAt: Date.now() });
      return { approver, csrfToken: reply.generateCsrf() };
    } catch (error) {
      return failure(reply, error);
    }
  });

  app.post('/api/sign-out', { onRequest: app.csrfProtection }, async (request) => {
    await request.session.destroy();
    return { approver: null };
  });

  app.get('/api/items', { onRequest: requireApprover }, async () => items.snapshot());

  // Each open stream holds a socket and a watcher: a cap per session and in all, so no one fills the server with them.
  const streams = { total: 0, perSession: new Map<string, number>() };
  const { maxEventStreams, maxEventStreamsPerSession } = config.inbox;
  app.get('/api/events', { onRequest: requireApprover }, (request, reply) => {
    const sessionId = request.session.sessionId;
    const ofSession = streams.perSession.get(sessionId) ?? 0;
    if (ofSession >= maxEventStreamsPerSession) {
      return reply.code(429).send({ error: `at most ${maxEventStreamsPerSession} live views per sign-in; close one first` });
    }
    if (streams.total >= maxEventStreams) {
      return reply.code(429).send({ error: `the inbox serves at most ${maxEventStreams} live views at once; try again later` });
    }
    streams.total++;
    streams.perSession.set(sessionId, ofSession + 1);
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-content-type-options': 'nosniff',
    });
    // The headers go out now: the page knows its view is live before the first list is looked up.
    response.flushHeaders();
    const send = (snapshot: InboxSnapshot) => response.write(`event: items\ndata: ${JSON.stringify(snapshot)}\n\n`);
    const stop = items.watch(send);
    // A comment line now and then keeps proxies from closing a quiet stream.
    const keepAlive = setInterval(() => response.write(': still here\n\n'), 15_000);
    // The response's close, not the request's: a request without a body is complete (and closed) at once.
    response.on('close', () => {
      clearInterval(keepAlive);
      stop();
      streams.total--;
      const left = (streams.perSession.get(sessionId) ?? 1) - 1;
      if (left > 0) streams.perSession.set(sessionId, left);
      else streams.perSession.delete(sessionId);
    });
    return reply;
  });

  app.post(
    '/api/decide',
    { onRequest: [requireApprover, app.csrfProtection], bodyLimit: DECISION_BODY_LIMIT_BYTES },
    async (request, reply) => {
      try {
        const approver = signedIn(request)!;
        const receipt = await forwardDecision({ client: client.client, approver, body: request.body });
        items.refreshSoon();
        return { receipt };
      } catch (error) {
        return failure(reply, error);
      }
    },
  );

  await app.listen({ port: config.inbox.port, host: config.inbox.host });
  const url = origin.origin;
  const enrollmentLink = (approver: string) => `${url}/enroll#${passkeys.enroll(approver, toMilliseconds(config.inbox.enrollmentTimeout))}`;
  const enrollmentLinks = Object.fromEntries(enroll.map((approver) => [approver, enrollmentLink(approver)]));
  for (const [approver, link] of Object.entries(enrollmentLinks))
    log(`Enrollment link for ${approver} (once, for ${humanDuration(toMilliseconds(config.inbox.enrollmentTimeout))}): ${link}`);
  return {
    url,
    enrollmentLinks,
    enrollmentLink,
    load: () => ({ sessions: sessions.size, eventStreams: streams.total }),
    async close() {
      await items.close();
      await app.close();
      sessions.close();
    },
  };
}
