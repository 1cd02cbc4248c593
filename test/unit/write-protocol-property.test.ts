// The write protocol (common/write-intent/) as the judge of random interleavings on the real boundary and the real
// stores: two workers run, look up and resolve writes at once, with handlers that are cut off, fail, or apply after
// their timeout; every handler start is a move the lifecycle must allow, given the proofs seen before it.
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import { z } from 'zod';
import { createLookupStatus } from '../../activities/boundary/lookup-status';
import { createResolveIntent } from '../../activities/boundary/resolve-intent';
import { createRunTool } from '../../activities/boundary/run-tool';
import type { BoundaryResult, ResolveIntentResult, StatusLookup } from '../../common/activity-types';
import { EFFECT_TRAITS } from '../../common/effects';
import { moveIntent, NEW_INTENT, type IntentLife, type IntentMove } from '../../common/write-intent/intent-lifecycle';
import type { IdempotencyStore } from '../../intents/intent-store';
import { openPostgresStore } from '../../intents/postgres-store';
import { openSqliteStore } from '../../intents/sqlite-store';
import { defineTool, type ToolDefinition } from '../../tools/define-tool';
import { intentKey } from '../../tools/intent-key';
import { createToolRegistry } from '../../tools/tool-registry';
import { ToolOutcome } from '../../tools/tool-outcome';
import { postgresUrl } from '../helpers/postgres';
import { propertyRuns, type PropertyRun } from '../helpers/property-runs';

/** A handler's timeout, and the store's grace after it: a handler that applies after its timeout does so inside the lease. */
const TIMEOUT_MS = 40;
const GRACE_MS = 80;

type Behaviour = 'ok' | 'cut_before' | 'cut_after' | 'fails' | 'late';

/** One step of a schedule: who does what, when it starts, and how a handler it runs behaves. */
interface Operation {
  worker: 0 | 1;
  kind: 'put' | 'send' | 'lookup_put' | 'lookup_send' | 'resolve_put' | 'resolve_send';
  slot: 'a' | 'b';
  content: 'x' | 'y';
  message: 'm1' | 'm2';
  startMs: number;
  behaviour: Behaviour;
  /** What a person resolving says. */
  says: 'applied' | 'not_applied';
}

const operation: fc.Arbitrary<Operation> = fc.record({
  worker: fc.constantFrom(0 as const, 1 as const),
  kind: fc.constantFrom(
    'put' as const,
    'put' as const,
    'send' as const,
    'send' as const,
    'lookup_put' as const,
    'lookup_send' as const,
    'resolve_put' as const,
    'resolve_send' as const,
  ),
  slot: fc.constantFrom('a' as const, 'b' as const),
  content: fc.constantFrom('x' as const, 'y' as const),
  message: fc.constantFrom('m1' as const, 'm2' as const),
  startMs: fc.integer({ min: 0, max: 30 }),
  behaviour: fc.constantFrom('ok' as const, 'ok' as const, 'cut_before' as const, 'cut_after' as const, 'fails' as const, 'late' as const),
  says: fc.constantFrom('applied' as const, 'not_applied' as const),
});

/** The schedules a property draws: up to 5 rounds, each of up to 3 operations at once. */
export const schedules = fc.array(fc.array(operation, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 5 });

const quiet = { logger: new DefaultLogger('ERROR') };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const reset = () => Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });

/**
 * The world the workers act on, and the judge: each intent's life under the protocol, moved by what
 * the test sees (a handler starting and ending, a status check answering while nothing runs, a
 * person's resolution); a start the lifecycle refuses is a violation.
 */
function world() {
  const slots = new Map<string, string>();
  const writes: Array<{ slot: string; content: string }> = [];
  const sends = new Map<string, number>();
  const running = new Map<string, number>();
  const lives = new Map<string, IntentLife>();
  const behaviours = new Map<string, Behaviour>();
  const violations: string[] = [];
  /** Intents a person said were applied: their receipts answer whatever the world holds. */
  const personSaidApplied = new Set<string>();
  const log: string[] = [];

  function move(key: string, tool: ToolDefinition, name: IntentMove, coerce?: IntentLife['state']): boolean {
    const life = lives.get(key) ?? NEW_INTENT;
    const moved = moveIntent(coerce ? { ...life, state: coerce } : life, name, EFFECT_TRAITS[tool.effect]);
    log.push(`${key} ${name}: ${moved.allowed ? moved.life.state : `refused (${moved.why})`}`);
    if (moved.allowed) lives.set(key, moved.life);
    return moved.allowed;
  }

  async function handled<T>(key: string, tool: ToolDefinition, callId: string, work: (behaviour: Behaviour) => Promise<T>): Promise<T> {
    if ((running.get(key) ?? 0) > 0) violations.push(`the handler of ${key} ran twice at once`);
    // The handler runs, so a claim was won: the lifecycle must allow this start after what it saw.
    if (!move(key, tool, 'start', 'claimed')) violations.push(`${callId} started ${key} again with no proof the last run did not apply`);
    running.set(key, (running.get(key) ?? 0) + 1);
    const behaviour = behaviours.get(callId)!;
    let ending: IntentMove = 'end_lease';
    try {
      const result = await work(behaviour);
      ending = behaviour === 'fails' ? 'release' : 'commit';
      return result;
    } finally {
      running.set(key, running.get(key)! - 1);
      move(key, tool, behaviour === 'late' ? 'expire' : ending);
    }
  }

  /** What a handler does with its effect, by its behaviour. */
  async function apply(behaviour: Behaviour, effect: () => void): Promise<unknown> {
    if (behaviour === 'fails') return ToolOutcome.error('the service said no', { code: 'tool_failure', retryable: false });
    if (behaviour === 'late') await sleep(TIMEOUT_MS + 10);
    else await sleep(2);
    if (behaviour === 'cut_before') throw reset();
    effect();
    await sleep(2);
    if (behaviour === 'cut_after') throw reset();
    return { done: true };
  }

  const put: ToolDefinition = defineTool({
    name: 'put',
    description: 'Puts a content in a slot.',
    input: z.strictObject({ slot: z.string().describe('slot'), content: z.string().describe('content') }),
    effect: 'reversible_write',
    timeout: TIMEOUT_MS,
    status: async ({ slot, content }, { idempotencyKey }) => {
      const answer = slots.get(slot) === content ? 'applied' : 'not_applied';
      // A check that finds it not applied while no handler of the intent runs proves the last run did not apply.
      if (answer === 'not_applied' && (running.get(idempotencyKey) ?? 0) === 0) move(idempotencyKey, put, 'found_not_applied');
      return answer;
    },
    handler: ({ slot, content }, { callId, idempotencyKey }) =>
      handled(idempotencyKey!, put, callId, (behaviour) =>
        apply(behaviour, () => {
          slots.set(slot, content);
          writes.push({ slot, content });
        }),
      ),
  });

  const send: ToolDefinition = defineTool({
    name: 'send',
    description: 'Sends a message.',
    input: z.strictObject({ message: z.string().describe('message') }),
    effect: 'irreversible_write',
    timeout: TIMEOUT_MS,
    handler: (_args, { callId, idempotencyKey }) =>
      handled(idempotencyKey!, send, callId, (behaviour) =>
        apply(behaviour, () => {
          sends.set(idempotencyKey!, (sends.get(idempotencyKey!) ?? 0) + 1);
        }),
      ),
  });

  function heldBetween(slot: string, content: string, from: number, to: number): boolean {
    const before = writes
      .slice(0, from)
      .filter((write) => write.slot === slot)
      .at(-1);
    return before?.content === content || writes.slice(from, to).some((write) => write.slot === slot && write.content === content);
  }

  return { put, send, sends, writes, running, behaviours, violations, personSaidApplied, heldBetween, move, log };
}

/** Runs one schedule on two workers sharing one store; the violations the judge found. */
async function runSchedule(stores: [IdempotencyStore, IdempotencyStore], rounds: Operation[][]): Promise<string[]> {
  const w = world();
  const taskId = `task-${randomUUID()}`;
  const workers = stores.map((store) => {
    const registry = createToolRegistry({ tools: [w.put, w.send] });
    return {
      runTool: createRunTool({ registry, store }),
      lookupStatus: createLookupStatus({ registry, store }),
      resolveIntent: createResolveIntent({ registry, store }),
    };
  });
  let calls = 0;
  const lingering: Array<Promise<unknown>> = [];
  for (const round of rounds) {
    await Promise.all(
      round.map(async (step) => {
        const callId = `call-${calls++}-0`;
        w.behaviours.set(callId, step.behaviour);
        await sleep(step.startMs);
        const { runTool, lookupStatus, resolveIntent } = workers[step.worker];
        const isPut = step.kind.endsWith('put');
        const tool = isPut ? w.put : w.send;
        const args = isPut ? { slot: step.slot, content: step.content } : { message: step.message };
        const key = intentKey(tool, args, taskId);
        const environment = new MockActivityEnvironment(undefined, quiet);
        const from = w.writes.length;
        let applied: boolean;
        if (step.kind.startsWith('resolve')) {
          // A turn asks a person only once the attempt's lease was waited out: the person here answers once no handler of it runs.
          while ((w.running.get(key) ?? 0) > 0) await sleep(5);
          const receipt = { status: 'success' as const, data: { resolvedByPerson: true } };
          const input = { taskId, callId, tool: tool.name, args, resolver: 'a person', outcome: step.says, receipt };
          const answer: ResolveIntentResult = await environment.run(resolveIntent, input);
          // The judge moves the intent by what the store recorded of the person's word.
          if (step.says === 'applied' && answer.store === 'committed') {
            w.personSaidApplied.add(key);
            w.move(key, tool, 'resolve_applied', 'unknown');
          }
          if (step.says === 'not_applied' && answer.store === 'released') w.move(key, tool, 'resolve_not_applied');
          return;
        }
        if (step.kind.startsWith('lookup')) {
          const answer: StatusLookup = await environment.run(lookupStatus, { taskId, callId, tool: tool.name, args });
          applied = answer.state === 'applied';
        } else {
          const ran: Promise<BoundaryResult> = environment.run(runTool, { taskId, callId, tool: tool.name, args, effect: tool.effect });
          // A handler that outlives its timeout keeps applying after runTool answered.
          lingering.push(ran.catch(() => undefined));
          const answer = await ran.catch((): undefined => undefined);
          applied = answer?.result.status === 'success' && answer.executions === 0;
        }
        if (!applied || w.personSaidApplied.has(key)) return;
        const holds = isPut ? w.heldBetween(step.slot, step.content, from, w.writes.length) : (w.sends.get(key) ?? 0) > 0;
        if (!holds) w.violations.push(`${callId} (${step.kind} ${JSON.stringify(args)}) answered applied, and the world never held it`);
      }),
    );
  }
  await Promise.all(lingering);
  while ([...w.running.values()].some((count) => count > 0)) await sleep(5);
  return w.violations.length > 0 ? [...w.violations, ...w.log] : [];
}

const opened: IdempotencyStore[] = [];
const runs: PropertyRun[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
  propertyRuns.record(runs);
});

const backends: Array<[string, () => [IdempotencyStore, IdempotencyStore]]> = [
  [
    'sqlite',
    () => {
      const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-protocol-')), 'intents.db');
      return [openSqliteStore(file, { inFlightGraceMs: GRACE_MS }), openSqliteStore(file, { inFlightGraceMs: GRACE_MS })];
    },
  ],
  [
    'postgres',
    () => [
      openPostgresStore(postgresUrl(), { inFlightGraceMs: GRACE_MS }),
      openPostgresStore(postgresUrl(), { inFlightGraceMs: GRACE_MS }),
    ],
  ],
];

describe.each(backends)('the write protocol on two workers sharing one %s store, under random interleavings', (name, open) => {
  const stores = open();
  opened.push(...stores);

  it('runs no intent twice without a proof, turns no unknown into a retry, and answers applied only for what the world holds', async () => {
    await propertyRuns.check({
      property: `write protocol (${name})`,
      cases: schedules,
      defaultRuns: 25,
      problems: (rounds) => runSchedule(stores, rounds),
      runs,
    });
  }, 120_000);
});
