import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLookupStatus } from '../../activities/boundary/lookup-status';
import { createRunTool } from '../../activities/boundary/run-tool';
import type { IdempotencyStore } from '../../intents/intent-store';
import { openPostgresStore } from '../../intents/postgres-store';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { BoundaryResult, StatusLookup } from '../../common/activity-types';
import { defineTool, type ToolDefinition } from '../../tools/define-tool';
import { intentKey } from '../../tools/intent-key';
import { createToolRegistry } from '../../tools/tool-registry';
import { postgresUrl } from '../helpers/postgres';

/** One step of a random schedule: which worker does what, when it starts, and how its handler behaves. */
interface Operation {
  worker: 0 | 1;
  kind: 'put' | 'send' | 'lookup_put' | 'lookup_send';
  slot: 'a' | 'b';
  content: 'x' | 'y';
  message: 'm1' | 'm2';
  /** Milliseconds before the operation starts, and inside the handler before and after its effect. */
  startMs: number;
  applyMs: number;
  /** A handler that is cut off (a connection reset) before or after its effect, or not at all. */
  cut: 'never' | 'before' | 'after';
}

const operation: fc.Arbitrary<Operation> = fc.record({
  worker: fc.constantFrom(0 as const, 1 as const),
  kind: fc.constantFrom('put' as const, 'send' as const, 'lookup_put' as const, 'lookup_send' as const),
  slot: fc.constantFrom('a' as const, 'b' as const),
  content: fc.constantFrom('x' as const, 'y' as const),
  message: fc.constantFrom('m1' as const, 'm2' as const),
  startMs: fc.integer({ min: 0, max: 6 }),
  applyMs: fc.integer({ min: 0, max: 4 }),
  cut: fc.constantFrom('never' as const, 'never' as const, 'before' as const, 'after' as const),
});

/** The boundary logs every cut-off handler; a schedule cuts off many on purpose. */
const quiet = { logger: new DefaultLogger('ERROR') };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const reset = () => Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });

/**
 * The world two workers act on, with a reversible `put` (a slot holds a content; its status check
 * reads the slot) and an irreversible `send`; it records every violation of the rules it checks.
 */
function world() {
  const slots = new Map<string, string>();
  /** Every write to a slot, in order: the world's history, so an answer can be checked against the span of its call. */
  const writes: Array<{ slot: string; content: string }> = [];
  const sends = new Map<string, number>();
  const running = new Map<string, number>();
  const operations = new Map<string, Operation>();
  const violations: string[] = [];

  async function guarded<T>(key: string, work: () => Promise<T>): Promise<T> {
    if ((running.get(key) ?? 0) > 0) violations.push(`the handler of ${key} ran twice at once`);
    running.set(key, (running.get(key) ?? 0) + 1);
    try {
      return await work();
    } finally {
      running.set(key, running.get(key)! - 1);
    }
  }

  const put: ToolDefinition = defineTool({
    name: 'put',
    description: 'Puts a content in a slot.',
    input: z.strictObject({ slot: z.string().describe('slot'), content: z.string().describe('content') }),
    effect: 'reversible_write',
    timeout: 5_000,
    status: async ({ slot, content }) => {
      await Promise.resolve();
      return slots.get(slot) === content ? 'applied' : 'not_applied';
    },
    handler: ({ slot, content }, { callId, idempotencyKey }) =>
      guarded(idempotencyKey!, async () => {
        const step = operations.get(callId)!;
        await sleep(step.applyMs);
        if (step.cut === 'before') throw reset();
        slots.set(slot, content);
        writes.push({ slot, content });
        await sleep(step.applyMs);
        if (step.cut === 'after') throw reset();
        return { slot, content };
      }),
  });

  const send: ToolDefinition = defineTool({
    name: 'send',
    description: 'Sends a message.',
    input: z.strictObject({ message: z.string().describe('message') }),
    effect: 'irreversible_write',
    timeout: 5_000,
    handler: (_args, { callId, idempotencyKey }) =>
      guarded(idempotencyKey!, async () => {
        const step = operations.get(callId)!;
        await sleep(step.applyMs);
        if (step.cut === 'before') throw reset();
        sends.set(idempotencyKey!, (sends.get(idempotencyKey!) ?? 0) + 1);
        if ((sends.get(idempotencyKey!) ?? 0) > 1) violations.push(`${idempotencyKey} was sent ${sends.get(idempotencyKey!)} times`);
        await sleep(step.applyMs);
        if (step.cut === 'after') throw reset();
        return { sent: true };
      }),
  });

  /** Whether the slot held the content at some moment between write `from` and write `to` of the world's history. */
  function heldBetween(slot: string, content: string, from: number, to: number): boolean {
    const before = writes
      .slice(0, from)
      .filter((write) => write.slot === slot)
      .at(-1);
    if (before?.content === content) return true;
    return writes.slice(from, to).some((write) => write.slot === slot && write.content === content);
  }

  return { put, send, slots, writes, sends, operations, violations, heldBetween };
}

/**
 * Runs one random schedule on two workers (each its own registry, boundary and store connection) and
 * checks the world's rules. The rounds run one after another; the operations of a round run at once.
 */
async function runSchedule(stores: [IdempotencyStore, IdempotencyStore], rounds: Operation[][]): Promise<string[]> {
  const w = world();
  const taskId = `task-${randomUUID()}`;
  const workers = stores.map((store) => {
    const registry = createToolRegistry({ tools: [w.put, w.send] });
    return { runTool: createRunTool({ registry, store }), lookupStatus: createLookupStatus({ registry, store }) };
  });
  let calls = 0;
  for (const round of rounds) {
    await Promise.all(
      round.map(async (step) => {
        const callId = `call-${calls++}-0`;
        w.operations.set(callId, step);
        await sleep(step.startMs);
        const { runTool, lookupStatus } = workers[step.worker];
        const isPut = step.kind === 'put' || step.kind === 'lookup_put';
        const tool = isPut ? w.put : w.send;
        const args = isPut ? { slot: step.slot, content: step.content } : { message: step.message };
        const key = intentKey(tool, args, taskId);
        const from = w.writes.length;
        const environment = new MockActivityEnvironment(undefined, quiet);
        let answer: StatusLookup | BoundaryResult | undefined;
        if (step.kind === 'lookup_put' || step.kind === 'lookup_send') {
          answer = await environment.run(lookupStatus, { taskId, callId, tool: tool.name, args });
        } else {
          // A cut-off handler is thrown as write_interrupted: it answers nothing.
          const ran: Promise<BoundaryResult> = environment.run(runTool, { taskId, callId, tool: tool.name, args, effect: tool.effect });
          answer = await ran.catch((): undefined => undefined);
        }
        const to = w.writes.length;
        const applied =
          answer && ('state' in answer ? answer.state === 'applied' : answer.result.status === 'success' && answer.executions === 0);
        if (!applied) return;
        const holds = isPut ? w.heldBetween(step.slot, step.content, from, to) : (w.sends.get(key) ?? 0) > 0;
        if (!holds)
          w.violations.push(
            `${callId} (${step.kind} ${JSON.stringify(args)}) answered applied, and the world never held it during the call`,
          );
      }),
    );
  }
  return w.violations;
}

const opened: IdempotencyStore[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
});

const backends: Array<[string, () => [IdempotencyStore, IdempotencyStore]]> = [
  [
    'sqlite',
    () => {
      const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-property-')), 'intents.db');
      return [openSqliteStore(file), openSqliteStore(file)];
    },
  ],
  ['postgres', () => [openPostgresStore(postgresUrl()), openPostgresStore(postgresUrl())]],
];

describe.each(backends)('two workers sharing one %s store, under random interleavings', (_name, open) => {
  const stores = open();
  opened.push(...stores);

  it('never run an intent twice at once, never send twice, and never answer applied for what the world does not hold', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(operation, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 5 }), async (rounds) => {
        expect(await runSchedule(stores, rounds)).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });
});
