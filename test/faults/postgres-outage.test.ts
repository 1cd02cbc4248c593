import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { IntentStoreError, type IdempotencyStore } from '../../intents/intent-store';
import { openPostgresStore } from '../../intents/postgres-store';
import type { AgentTurnResult, ScriptStep } from '../../common/contract/turn';
import { PROJECT_ROOT } from '../../config/load-config';
import type { TollgateConfig } from '../../config/config-schema';
import { builtInTools } from '../../tools/built-in';
import { taskFolderName } from '../../tools/built-in/workspace-path';
import { argsDigest } from '../../tools/canonical-json';
import type { ToolDefinition } from '../../tools/define-tool';
import { createWorker } from '../../worker/create-worker';
import { approvalSignal, stateQuery } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment } from '../helpers/turn-runner';
import { roundOf } from '../../testing/round-of';

const OUTAGE_MS = 3_000;
const TURNS = 6;
const LATER_TURNS = 2;
/** How long each draft write takes, so that the turns are still running when the store goes away. */
const DRAFT_WRITE_MS = 250;

const environment = useTimeSkippingEnvironment();

/** The test database prepared by `node scripts/setup.mjs --system`, or TOLLGATE_TEST_POSTGRES_URL. */
function postgresUrl(): string {
  if (process.env.TOLLGATE_TEST_POSTGRES_URL) return process.env.TOLLGATE_TEST_POSTGRES_URL;
  const file = path.join(PROJECT_ROOT, '.tollgate', 'state', 'postgres-test-url');
  if (!existsSync(file)) {
    throw new Error('no PostgreSQL for the tests: run `node scripts/setup.mjs --system` as root, or set TOLLGATE_TEST_POSTGRES_URL');
  }
  return readFileSync(file, 'utf8').trim();
}

/** A TCP proxy in front of PostgreSQL whose outage cuts every connection and refuses new ones, leaving the server itself running. */
interface OutageProxy {
  /** The PostgreSQL URL that goes through the proxy. */
  url: string;
  /** Connections accepted so far. */
  accepted(): number;
  /** From now on the server's replies are withheld, so that queries sent stay in flight until the cut. */
  withholdReplies(): void;
  /** Destroys every proxied connection and stops listening: new connections are refused. */
  cut(): Promise<void>;
  /** Listens again on the same port and forwards everything. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

async function startOutageProxy(target: string): Promise<OutageProxy> {
  const upstream = new URL(target);
  const upstreamPort = Number(upstream.port || 5432);
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  let withholding = false;
  const server = net.createServer((client) => {
    accepted++;
    const database = net.connect({ host: upstream.hostname, port: upstreamPort });
    for (const socket of [client, database]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        database.destroy();
      });
    }
    client.on('data', (chunk) => database.write(chunk));
    database.on('data', (chunk) => withholding || client.write(chunk));
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(port);
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  return {
    url: proxied.toString(),
    accepted: () => accepted,
    withholdReplies: () => (withholding = true),
    cut: stop,
    async restore() {
      withholding = false;
      await listen(port);
    },
    close: stop,
  };
}

/** Whether connecting to the proxy is refused right now. */
function refused(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

async function elapsed<T>(work: Promise<T>): Promise<{ ms: number; outcome: PromiseSettledResult<T> }> {
  const started = performance.now();
  const [outcome] = await Promise.allSettled([work]);
  return { ms: performance.now() - started, outcome };
}

describe('a PostgreSQL outage', () => {
  it('fails store calls with an IntentStoreError in bounded time while unreachable, and the store reconnects after it', async () => {
    const proxy = await startOutageProxy(postgresUrl());
    cleanups.push(() => proxy.close());
    const store = openPostgresStore(proxy.url);
    cleanups.push(() => store.close());
    const key = `outage-${randomUUID()}`;
    const claim = (callId: string) =>
      store.claim({ key, taskId: 'outage', tool: 'save_draft', callId, argsDigest: 'digest', effect: 'reversible_write', leaseMs: 60_000 });
    await expect(store.get(key)).resolves.toBeUndefined();

    // A claim whose transaction is under way when the connection is cut.
    proxy.withholdReplies();
    const inFlight = elapsed(claim('call-0-0'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await proxy.cut();
    await expect(refused(proxy.url)).resolves.toBe(true);
    const cutClaim = await inFlight;
    const lookup = await elapsed(store.get(key));
    const refusedClaim = await elapsed(claim('call-1-0'));
    for (const { ms, outcome } of [cutClaim, lookup, refusedClaim]) {
      expect(outcome.status).toBe('rejected');
      const reason = (outcome as PromiseRejectedResult).reason;
      expect(reason).toBeInstanceOf(IntentStoreError);
      expect((reason as Error).message).toMatch(/^the idempotency store could not (claim|read) intent outage-/);
      expect(ms).toBeLessThan(15_000);
    }

    await proxy.restore();
    const before = proxy.accepted();
    const after = await elapsed(store.get(key));
    expect(after.outcome).toMatchObject({ status: 'fulfilled' });
    await expect(claim('call-2-0')).resolves.toMatchObject({ claimed: true });
    expect(proxy.accepted()).toBeGreaterThan(before);
    const ms = (value: number) => `${Math.round(value)} ms`;
    console.log(
      `postgres outage, store: cut claim failed in ${ms(cutClaim.ms)}, lookup in ${ms(lookup.ms)}, ` +
        `refused claim in ${ms(refusedClaim.ms)}; ` +
        `first call after the restore answered in ${ms(after.ms)}`,
    );
  }, 60_000);

  // With kept contents (the default) the model steps read the store too: the outage may meet them, retried until it is back.
  it.each([
    { keepContents: false, what: 'the store holding intents only' },
    { keepContents: true, what: 'the store keeping contents too, the default' },
  ])(
    `lets ${TURNS} running turns complete through a ${OUTAGE_MS / 1000} s outage, no write twice; later turns succeed fully ($what)`,
    async ({ keepContents }) => {
      const { env, workflowBundle } = environment;
      const proxy = await startOutageProxy(postgresUrl());
      cleanups.push(() => proxy.close());
      const store: IdempotencyStore = openPostgresStore(proxy.url);
      cleanups.push(() => store.close());
      const taskQueue = `postgres-outage-${randomUUID()}`;
      // Task ids unique to this run: the shared store keeps the intents of earlier runs.
      const taskPrefix = `outage-${Date.now().toString(36)}`;
      // What this test checks is that no write the store could not record is guessed at: with
      // `outcomes.onUnknown: report` the model is told `outcome_unknown` at once, as the turns here
      // have nobody to resolve them (under the default `ask` each would wait 24 h for a person).
      const base = testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' }, outcomes: { onUnknown: 'report' } });
      const config: TollgateConfig = { ...base, store: { ...base.store, keepContents }, temporal: { ...base.temporal, taskQueue } };
      const draftWrites = new Map<string, number>();
      const tools = builtInTools(config).map((tool): ToolDefinition => {
        if (tool.name !== 'save_draft') return tool;
        return {
          ...tool,
          handler: async (args, context) => {
            await new Promise((resolve) => setTimeout(resolve, DRAFT_WRITE_MS));
            const outcome = await tool.handler(args, context);
            draftWrites.set(context.idempotencyKey!, (draftWrites.get(context.idempotencyKey!) ?? 0) + 1);
            return outcome;
          },
        };
      });
      const activities = createActivities({ config, tools, store });
      const worker = await createWorker({ config, connection: env.nativeConnection, activities, workflowBundle });
      // A plain client, so that waiting for a result never lets the test server skip time.
      const client = new Client({ connection: env.connection, namespace: 'default' });

      const sendArgs = (taskId: string) => ({ to: 'ops', subject: `about ${taskId}`, body: `the brief of ${taskId}` });
      const scriptOf = (taskId: string): ScriptStep[] => [
        { toolCalls: [{ tool: 'save_draft', args: { path: 'a.md', content: `first draft of ${taskId}\n` } }] },
        { toolCalls: [{ tool: 'save_draft', args: { path: 'b.md', content: `second draft of ${taskId}\n` } }] },
        { toolCalls: [{ tool: 'send_message', args: sendArgs(taskId) }] },
        { toolCalls: [{ tool: 'save_draft', args: { path: 'c.md', content: `third draft of ${taskId}\n` } }] },
        { toolCalls: [{ tool: 'save_draft', args: { path: 'd.md', content: `fourth draft of ${taskId}\n` } }] },
        { text: `${taskId} done` },
      ];
      const running = new Map<string, { handle: WorkflowHandle; taskId: string; approved: Set<string> }>();
      const start = async (taskId: string) => {
        const handle = await client.workflow.start('agentTurn', {
          workflowId: `turn-${randomUUID()}`,
          taskQueue,
          args: [{ taskId, prompt: `drafts of ${taskId}`, model: scripted(scriptOf(taskId)), limits: { errorBudget: 10, maxSteps: 20 } }],
        });
        running.set(handle.workflowId, { handle, taskId, approved: new Set() });
        const result = (handle.result() as Promise<AgentTurnResult>).finally(() => running.delete(handle.workflowId));
        return { taskId, result, workflowId: handle.workflowId };
      };
      // A person approves each message as it waits, naming the digest of the message they were shown;
      // the odd turns' messages only once the outage is over, so that those sends meet a store that came back.
      // Only running turns are asked: a query needs the worker, which stops after the turns.
      let approving = true;
      let restored = false;
      const approve = async () => {
        while (approving) {
          for (const { handle, taskId, approved } of [...running.values()]) {
            if (!restored && Number(taskId.split('-').at(-1)) % 2 === 1) continue;
            const state = await handle.query(stateQuery).catch(() => undefined);
            for (const pending of state?.pendingApprovals ?? []) {
              if (approved.has(`${pending.callId}#${pending.round}`)) continue;
              approved.add(`${pending.callId}#${pending.round}`);
              const digest = argsDigest(sendArgs(taskId));
              await handle.signal(approvalSignal, {
                callId: pending.callId,
                decision: 'approve',
                approver: 'ops',
                argsDigest: digest,
                ...roundOf(pending),
              });
            }
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };

      const workspace = config.workspace;
      const messagesOf = (taskId: string) => {
        const folder = path.join(workspace, 'outbox', taskFolderName(taskId));
        return existsSync(folder) ? readdirSync(folder).filter((file) => file.endsWith('.json')) : [];
      };
      const draftOf = (taskId: string, name: string) => readFileSync(path.join(workspace, 'drafts', taskFolderName(taskId), name), 'utf8');

      const measured = await worker.runUntil(async () => {
        const approver = approve();
        const during = await Promise.all(Array.from({ length: TURNS }, (_, turn) => start(`${taskPrefix}-${turn}`)));
        // The outage begins once every turn has written its first draft, so each is mid-way.
        const deadline = Date.now() + 30_000;
        while (draftWrites.size < TURNS) {
          if (Date.now() > deadline) throw new Error(`only ${draftWrites.size} of ${TURNS} first drafts were written`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await proxy.cut();
        const cutAt = performance.now();
        await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
        await proxy.restore();
        restored = true;
        const outageMs = performance.now() - cutAt;
        const duringResults = await Promise.all(
          during.map(async ({ taskId, result, workflowId }) => ({ taskId, result: await result, workflowId })),
        );
        const after = await Promise.all(Array.from({ length: LATER_TURNS }, (_, turn) => start(`${taskPrefix}-after-${turn}`)));
        const afterResults = await Promise.all(after.map(async ({ taskId, result }) => ({ taskId, result: await result })));
        approving = false;
        await approver;
        return { outageMs, duringResults, afterResults };
      });

      const { outageMs, duringResults, afterResults } = measured;
      const calls = duringResults.flatMap(({ result }) => result.toolCalls);
      expect(duringResults.map(({ result }) => result.status)).toEqual(Array(TURNS).fill('completed'));
      expect(calls).toHaveLength(TURNS * 5);
      // A call the store failed before its handler ran did not run (not_run, 0 executions); one whose outcome the store could not record is unknown.
      for (const call of calls) {
        if (call.status === 'success') continue;
        if (call.code === 'not_run') expect(call, `${call.tool} ${call.callId}`).toMatchObject({ status: 'error', executions: 0 });
        else expect(call, `${call.tool} ${call.callId}`).toMatchObject({ status: 'error', code: 'outcome_unknown' });
      }
      const unknown = calls.filter((call) => call.status !== 'success');
      // Model steps the outage met: their last attempt's started event says which attempt it was.
      const histories = await Promise.all(duringResults.map(({ workflowId }) => client.workflow.getHandle(workflowId).fetchHistory()));
      const retriedSteps = histories
        .flatMap((history) => history.events ?? [])
        .filter((event) => (event.activityTaskStartedEventAttributes?.attempt ?? 1) > 1).length;
      // The outage reached the running turns: some of their calls could not be recorded, and were not guessed at (or,
      // with kept contents, model steps that read the store were tried again until it was back).
      if (keepContents) expect(unknown.length + retriedSteps).toBeGreaterThan(0);
      else expect(unknown.length).toBeGreaterThan(0);
      // The same worker's store reconnected for the running turns too: every message approved after the outage was sent.
      for (const { taskId, result } of duringResults.filter((_, turn) => turn % 2 === 1)) {
        expect(
          result.toolCalls.find((call) => call.tool === 'send_message'),
          `the send of ${taskId}`,
        ).toMatchObject({ status: 'success' });
      }
      for (const { taskId, result } of duringResults) {
        const messages = messagesOf(taskId);
        const send = result.toolCalls.find((call) => call.tool === 'send_message')!;
        expect(messages.length, `messages of ${taskId}`).toBeLessThanOrEqual(1);
        if (send.status === 'success') expect(messages, `messages of ${taskId}`).toHaveLength(1);
        for (const [index, draft] of result.toolCalls.filter((call) => call.tool === 'save_draft').entries()) {
          if (draft.status === 'success') expect(draftOf(taskId, `${'abcd'[index]}.md`)).toContain(`draft of ${taskId}`);
        }
      }
      expect([...draftWrites.entries()].filter(([, count]) => count > 1)).toEqual([]);

      // After the outage the store answers again: every call of a new turn succeeds.
      for (const { taskId, result } of afterResults) {
        expect(result.status).toBe('completed');
        expect(result.toolCalls.map(({ tool, status }) => ({ tool, status }))).toEqual(
          ['save_draft', 'save_draft', 'send_message', 'save_draft', 'save_draft'].map((tool) => ({ tool, status: 'success' })),
        );
        expect(messagesOf(taskId)).toHaveLength(1);
        for (const name of ['a.md', 'b.md', 'c.md', 'd.md']) expect(draftOf(taskId, name)).toContain(`draft of ${taskId}`);
      }
      const sends = duringResults.map(({ result }) => result.toolCalls.find((call) => call.tool === 'send_message')!);
      const writes = [...draftWrites.values()].reduce((sum, count) => sum + count, 0);
      console.log(
        `postgres outage: ${(outageMs / 1000).toFixed(1)} s outage under ${TURNS} running turns, all completed; ` +
          `${calls.length - unknown.length} calls succeeded, ` +
          `${unknown.filter((call) => call.code === 'outcome_unknown').length} outcome_unknown, ` +
          `${unknown.filter((call) => call.code === 'not_run').length} not_run; ${sends.filter((send) => send.status === 'success').length} of ${TURNS} messages sent, ` +
          `${duringResults.reduce((sum, { taskId }) => sum + messagesOf(taskId).length, 0)} in the outbox; ` +
          `${writes} draft writes for ${draftWrites.size} intents; ` +
          `${LATER_TURNS} turns after it succeeded fully; ${retriedSteps} activities retried (keepContents ${keepContents})`,
      );
    },
    120_000,
  );
});
