import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isResultReference } from '../../common/kept-results';
import { openSqliteStore } from '../../intents/sqlite-store';
import { defineTool } from '../../tools/define-tool';
import { openaiStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);
let provider: FakeProvider;
// Histories of this file are larger than gRPC's default 4 MB message bound.
let historyConnection: Connection;

beforeAll(async () => {
  provider = await startFakeProvider();
  historyConnection = await Connection.connect({
    address: environment.env.address,
    channelArgs: { 'grpc.max_receive_message_length': 256 * 1024 * 1024 },
  });
});

afterAll(async () => {
  await historyConnection?.close();
  await provider.close();
});

const modelEnvironment = { env: { OPENAI_API_KEY: 'sk-test-openai-key' } };
const TWO_MB = 2 * 1024 * 1024;

function gptConfig() {
  return testConfig({
    retry: { initialInterval: '100ms', maximumInterval: '1s' },
    model: { default: 'gpt', models: { gpt: { provider: 'openai', model: 'gpt-test', baseURL: provider.baseURL } } },
  });
}

/** A draft of about `chars` characters whose text differs per step, so no two saves are alike. */
function largeDraft(step: number, chars: number): string {
  const line = `Step ${step}: the on-call primary acknowledges a page within 15 minutes. `;
  return line.repeat(Math.ceil(chars / line.length)).slice(0, chars);
}

/** Queues `steps` replies that each save one large draft at its own path, then a final answer. */
function queueDraftSaves(steps: number, chars: number): void {
  for (let step = 0; step < steps; step++) {
    const args = JSON.stringify({ path: `draft-${step}.md`, content: largeDraft(step, chars) });
    provider.enqueue({ kind: 'stream', events: openaiStream.toolCall('save_draft', [args]) });
  }
  provider.enqueue({ kind: 'stream', events: openaiStream.text(['All ', 'drafts ', 'saved.']) });
}

type History = Awaited<ReturnType<typeof runTurn>>['history'];

/** Bytes of each event as the server stores it (its protobuf encoding). */
function eventBytes(history: History): number[] {
  return (history.events ?? []).map((event) => temporal.api.history.v1.HistoryEvent.encode(event).finish().length);
}

/** The history's size in bytes just before each model step was scheduled: entry k is the size before step k. */
function sizeBeforeEachModelStep(history: History): number[] {
  const sizes = eventBytes(history);
  const before: number[] = [];
  let total = 0;
  (history.events ?? []).forEach((event, index) => {
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep') before.push(total);
    total += sizes[index];
  });
  return before;
}

describe('history growth of a turn that saves large drafts', () => {
  it('grows linearly over 30 steps of ~100 KB drafts, and no event comes near the 2 MB payload limit', async () => {
    const steps = 30;
    queueDraftSaves(steps, 100_000);
    const { result, history, handle, modelInputs } = await runTurn({
      config: gptConfig(),
      modelEnvironment,
      historyConnection,
      input: { prompt: 'Save thirty drafts.', limits: { maxSteps: steps + 10, maxToolCalls: steps + 10 } },
    });
    const sizes = sizeBeforeEachModelStep(history);
    const described = await handle.describe();
    const largestEvent = Math.max(...eventBytes(history));
    const table = [0, 5, 10, 15, 20, 25, 30].map((step) => `${String(step).padStart(5)} | ${String(sizes[step]).padStart(12)}`);
    const reported = described.raw.workflowExecutionInfo?.historySizeBytes;
    const server = `server's historySizeBytes at the end: ${reported}; largest event: ${largestEvent} bytes`;
    console.log(['steps | history bytes before the step', ...table, server].join('\n'));

    expect(result.status).toBe('completed');
    expect(result.toolCalls).toHaveLength(steps);
    expect(result.toolCalls.every((event) => event.tool === 'save_draft' && event.status === 'success')).toBe(true);
    expect(sizes).toHaveLength(steps + 1);
    // The last step was sent every earlier call by reference: the digest and size of its ~100 KB arguments, not the draft.
    const keptCalls = modelInputs[steps].messages.flatMap((message) => (message.role === 'assistant' ? message.toolCalls : []));
    expect(keptCalls).toHaveLength(steps);
    for (const call of keptCalls)
      expect(call.args).toEqual({ $ref: 'args', argsDigest: expect.stringMatching(/\S/), chars: expect.any(Number) });
    expect(keptCalls.every((call) => (call.args as { chars: number }).chars > 100_000)).toBe(true);
    expect(JSON.stringify(provider.requests.at(-1)?.body)).toContain('[arguments of call call-29-0: ');
    expect(largestEvent).toBeLessThan(TWO_MB);
    const firstHalf = sizes[15] - sizes[0];
    const secondHalf = sizes[30] - sizes[15];
    expect(secondHalf / firstHalf).toBeLessThan(1.5);
    expect(secondHalf / firstHalf).toBeGreaterThan(1 / 1.5);
  }, 180_000);
});

describe('a turn whose history nears its limits', () => {
  const reads = (count: number) =>
    scripted([
      ...Array.from({ length: count }, () => ({ toolCalls: [{ tool: 'get_document', args: { id: 'pricing-plans' } }] })),
      { text: 'done' },
    ]);
  const modelStepIds = (history: History) =>
    (history.events ?? []).flatMap((event) =>
      event.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep' ? [Number(event.eventId)] : [],
    );

  it('ends with history_limit, its tool events kept, before a step would start on a history of maxHistoryEvents events', async () => {
    const maxHistoryEvents = 40;
    const limits = { maxSteps: 20, maxToolCalls: 20 };
    const unbounded = await runTurn({ input: { prompt: 'read', model: reads(10), limits } });
    expect(unbounded.result.status).toBe('completed');
    expect(Math.max(...modelStepIds(unbounded.history))).toBeGreaterThan(maxHistoryEvents);

    const { result, state, history } = await runTurn({
      input: { prompt: 'read', model: reads(10), limits: { ...limits, maxHistoryEvents } },
    });
    expect(result.status).toBe('history_limit');
    expect(state.status).toBe('history_limit');
    expect(result.answer).toBeUndefined();
    expect(result.toolCalls.length).toBeGreaterThan(0);
    expect(result.toolCalls.length).toBeLessThan(10);
    expect(result.toolCalls.every((event) => event.status === 'success')).toBe(true);
    // Each step was scheduled by a workflow task that started on fewer events than the limit (the task's
    // started event is the last one counted, its completion and the scheduling follow).
    expect(Math.max(...modelStepIds(history))).toBeLessThanOrEqual(maxHistoryEvents + 1);
  });

  it('ends with history_limit once the history has maxHistoryBytes bytes', async () => {
    const maxHistoryBytes = 12_000;
    const { result, history } = await runTurn({
      input: { prompt: 'read', model: reads(10), limits: { maxSteps: 20, maxToolCalls: 20, maxHistoryBytes } },
    });
    const sizes = sizeBeforeEachModelStep(history);
    expect(result.status).toBe('history_limit');
    // Some steps ran (a read each, ~3.5 KB of history), and each started on a history below the bound.
    expect(result.toolCalls.length).toBeGreaterThan(0);
    expect(result.toolCalls.length).toBeLessThan(10);
    expect(sizes.every((size) => size < maxHistoryBytes)).toBe(true);
    expect(eventBytes(history).reduce((sum, bytes) => sum + bytes, 0)).toBeGreaterThan(maxHistoryBytes);
  });
});

/** Characters of one page `read_big` returns. */
const DOCUMENT_CHARS = 8_000;
/** A read whose every page is a large result (over the 1,024 characters kept by reference). */
const readBig = defineTool({
  name: 'read_big',
  description: 'Reads one large document.',
  input: z.strictObject({ page: z.number().int() }),
  effect: 'read',
  maxOutputChars: 20_000,
  handler: async ({ page }) => `Page ${page}: ${'the refund policy in full detail. '.repeat(DOCUMENT_CHARS / 33)}`.slice(0, DOCUMENT_CHARS),
});

describe('a turn of large reads: each result recorded once, later steps sent it by reference', () => {
  const reads = (steps: number) =>
    scripted([...Array.from({ length: steps }, (_, page) => ({ toolCalls: [{ tool: 'read_big', args: { page } }] })), { text: 'read' }]);

  it('grows by the same bytes at every step from 2 to 16 steps, and the model is still sent every result whole', async () => {
    const steps = 16;
    const storeFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-kept-')), 'store.db');
    const store = openSqliteStore(storeFile);
    const { result, history, sentInputs, modelInputs } = await runTurn({
      store,
      tools: [readBig],
      input: { prompt: 'read everything', model: reads(steps), limits: { maxSteps: steps + 2, maxToolCalls: steps + 2 } },
    });
    await store.close();
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toHaveLength(steps);
    // The store holds each message once: one transcript link per step, each with only the messages added since.
    const database = new Database(storeFile, { readonly: true });
    const links = database.prepare("SELECT content FROM kept_contents WHERE key LIKE '%/transcript/%'").all() as Array<{ content: string }>;
    const results = database.prepare("SELECT count(*) AS count FROM kept_contents WHERE key NOT LIKE '%/transcript/%'").get() as {
      count: number;
    };
    database.close();
    expect(links).toHaveLength(steps + 1);
    expect(links.map((link) => (JSON.parse(link.content) as { added: unknown[] }).added.length).sort((a, b) => a - b)).toEqual([
      1,
      ...Array(steps).fill(2),
    ]);
    expect(results.count).toBe(steps);
    const sizes = sizeBeforeEachModelStep(history);
    const growth = sizes.slice(1).map((size, index) => size - sizes[index]);
    console.log(`history bytes added per step (${DOCUMENT_CHARS}-character reads): ${growth.join(', ')}`);
    // Linear: the last steps add about what the second added (quadratic growth would add 15 results' worth more).
    expect(Math.max(...growth.slice(1)) / Math.min(...growth.slice(1))).toBeLessThan(1.2);
    // Each step after the first was sent only the messages added since (the call and its result, by reference) and
    // the transcript the previous step kept; the model saw every result whole.
    for (const [index, input] of sentInputs.slice(1).entries()) {
      expect(input.earlier?.count).toBe(1 + 2 * index);
      expect(input.messages.map((message) => message.role)).toEqual(['assistant', 'tool']);
      expect(input.messages.every((message) => message.role !== 'tool' || isResultReference(message.result))).toBe(true);
    }
    const seen = modelInputs.at(-1)!.messages.filter((message) => message.role === 'tool');
    expect(seen.map((message) => (message.role === 'tool' ? String(message.result.data).slice(0, 8) : ''))).toEqual(
      Array.from({ length: steps }, (_, page) => `Page ${page}: `.slice(0, 8)),
    );
    expect(seen.every((message) => message.role === 'tool' && String(message.result.data).length === DOCUMENT_CHARS)).toBe(true);
  }, 120_000);

  it('fails the turn clearly, never with a different prompt, when the store the step reads has not what the turn kept', async () => {
    // Two stores that are not shared: the turn kept a result (or a transcript) in one, the model step reads the other.
    const cases = [
      {
        hidden: '/call-',
        names: /the result of call call-\d+-0 \(read_big, 8,0\d\d characters, digest [0-9a-f]{64}\) is not in the SQLite store /,
      },
      {
        hidden: '/transcript/',
        names: /the turn's messages 1 to 1 \(digest [0-9a-f]{64}, kept by an earlier model step\) is not in the SQLite store /,
      },
    ];
    for (const { hidden, names } of cases) {
      const store = openSqliteStore(':memory:');
      const unshared = { ...store, readContent: async (key: string) => (key.includes(hidden) ? undefined : store.readContent!(key)) };
      try {
        const { result } = await runTurn({
          config: testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' } }),
          store: unshared,
          tools: [readBig],
          input: { prompt: 'read twice', model: reads(2), limits: { maxSteps: 4, maxToolCalls: 4 } },
        });
        expect(result.status).toBe('model_failed');
        expect(result.error?.message).toMatch(names);
        expect(result.error?.message).toMatch(/every worker of a task queue must share one store/);
        // The second step failed before its model was asked: only the first step's call ran.
        expect(result.toolCalls).toHaveLength(1);
      } finally {
        await store.close();
      }
    }
  }, 120_000);
});

describe('kept contents changed in the store', () => {
  it('refuses a result or transcript whose content no longer matches its digest: the turn fails at once, naming it, and the model is never sent it', async () => {
    for (const [tampered, names] of [
      ['/call-', /the result of call call-\d+-0 \(read_big, 8,0\d\d characters, digest [0-9a-f]{64}\) changed in the SQLite store /],
      ['/transcript/', /the turn's messages 1 to 1 \(digest [0-9a-f]{64}, kept by an earlier model step\) changed in the SQLite store /],
    ] as const) {
      const store = openSqliteStore(':memory:');
      // Someone with access to the store rewrote what the turn kept (the same key, other content).
      const altered = {
        ...store,
        readContent: async (key: string) => {
          const kept = await store.readContent!(key);
          return kept && key.includes(tampered)
            ? { ...kept, content: kept.content.replace('Page 0', 'Page 9').replace('read twice', 'read thrice') }
            : kept;
        },
      };
      try {
        const { result, modelInputs } = await runTurn({
          config: testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' } }),
          store: altered,
          tools: [readBig],
          input: {
            prompt: 'read twice',
            model: scripted([
              { toolCalls: [{ tool: 'read_big', args: { page: 0 } }] },
              { toolCalls: [{ tool: 'read_big', args: { page: 1 } }] },
              { text: 'read' },
            ]),
            limits: { maxSteps: 4, maxToolCalls: 4 },
          },
        });
        expect(result.status).toBe('model_failed');
        expect(result.error?.message).toMatch(names);
        expect(result.toolCalls).toHaveLength(1);
        // No model step was sent the altered content.
        expect(JSON.stringify(modelInputs)).not.toContain('Page 9');
        expect(JSON.stringify(modelInputs)).not.toContain('read thrice');
      } finally {
        await store.close();
      }
    }
  }, 120_000);
});
