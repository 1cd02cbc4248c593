import type { StepMessage } from '../../common/kept-results';
import { randomUUID } from 'node:crypto';
import type { temporal } from '@temporalio/proto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { ModelStepInput } from '../../common/activity-types';
import { CONVERSATION_BOUNDS } from '../../common/defaults';
import type { ConversationInput } from '../../common/contract/conversation';
import type { AgentTurnResult } from '../../common/contract/turn';
import { createWorker } from '../../worker/create-worker';
import { jsonBytes } from '../../workflows/conversation-history';
import { closeConversationSignal, historyQuery, sendUpdate } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
// Histories of runs that took sends of 600 KB of JSON each are larger than gRPC's 4 MB default message.
let historyConnection: Connection;
beforeAll(async () => {
  historyConnection = await Connection.connect({
    address: environment.env.address,
    channelArgs: { 'grpc.max_receive_message_length': 256 * 1024 * 1024 },
  });
});
afterAll(async () => {
  await historyConnection?.close();
});

/** The bytes of a list of payloads as the server stores them (data and metadata). */
function payloadBytes(payloads: temporal.api.common.v1.IPayloads | null | undefined): number {
  return (payloads?.payloads ?? []).reduce(
    (sum, payload) =>
      sum +
      (payload.data?.length ?? 0) +
      Object.entries(payload.metadata ?? {}).reduce((inner, [name, value]) => inner + name.length + value.length, 0),
    0,
  );
}

/** What the runs of a conversation recorded: the bytes of each continue-as-new input and of each turn's input. */
async function recordedInputs(workflowId: string, runIds: string[]) {
  const carried: number[] = [];
  const turns: number[] = [];
  for (const runId of runIds) {
    const client = new Client({ connection: historyConnection, namespace: environment.env.namespace });
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    for (const event of history.events ?? []) {
      const continued = event.workflowExecutionContinuedAsNewEventAttributes;
      if (continued) carried.push(payloadBytes(continued.input));
      const child = event.startChildWorkflowExecutionInitiatedEventAttributes;
      if (child) turns.push(payloadBytes(child.input));
    }
  }
  return { carried, turns };
}

/** The text of a message as the model reads it. */
const said = (message: StepMessage) =>
  message.role === 'user' ? message.content : message.role === 'assistant' ? (message.text ?? '') : '';

/** Runs a conversation on its own worker: sends every text, one after the other, and returns what the turns and the model saw. */
async function converse(texts: string[], input: Partial<ConversationInput> = {}) {
  const { env, workflowBundle } = environment;
  const taskQueue = `test-${randomUUID()}`;
  const base = testConfig();
  const config = { ...base, temporal: { ...base.temporal, taskQueue } };
  const activities = createActivities({ config, store: openSqliteStore(':memory:') });
  const modelInputs: ModelStepInput[] = [];
  const observed = {
    ...activities,
    modelStep: async (stepInput: ModelStepInput) => (modelInputs.push(stepInput), activities.modelStep(stepInput)),
  };
  const worker = await createWorker({ config, connection: env.nativeConnection, activities: observed, workflowBundle });
  const conversationId = `conversation-${randomUUID()}`;
  return worker.runUntil(async () => {
    const handle = await env.client.workflow.start('conversation', {
      workflowId: conversationId,
      taskQueue,
      args: [{ conversationId, model: scripted([{ text: 'noted' }]), ...input }],
    });
    const runIds = new Set<string>([(await handle.describe()).runId]);
    const answers: Array<string | undefined> = [];
    for (const text of texts) {
      const latest = env.client.workflow.getHandle(conversationId);
      const result = (await latest.executeUpdate(sendUpdate, { args: [{ text }] })) as AgentTurnResult;
      answers.push(result.answer);
      runIds.add((await latest.describe()).runId);
    }
    const latest = env.client.workflow.getHandle(conversationId);
    const state = await latest.query(historyQuery);
    const recorded = await recordedInputs(conversationId, [...runIds]);
    await latest.signal(closeConversationSignal);
    const closed = await latest.result();
    return { answers, state, closed, runIds: [...runIds], recorded, modelInputs };
  });
}

describe('a conversation flooded with the longest sends', () => {
  it('answers 21 sends of 100,000 characters, continues as new and keeps answering; every carried and turn input stays within its bound', async () => {
    const texts = Array.from({ length: 21 }, (_, index) => `${index}:`.padEnd(100_000, 'x'));
    const { answers, state, closed, runIds, recorded, modelInputs } = await converse(texts, { maxTurnsPerRun: 4 });
    expect(answers).toEqual(texts.map(() => 'noted'));
    expect(runIds.length).toBeGreaterThanOrEqual(5);
    expect(recorded.carried.length).toBe(runIds.length - 1);
    expect(recorded.turns).toHaveLength(21);
    for (const bytes of [...recorded.carried, ...recorded.turns]) expect(bytes).toBeLessThanOrEqual(CONVERSATION_BOUNDS.inputBytes);
    // What was carried: the newest exchanges whole, the older ones counted.
    expect(state.turns).toBe(21);
    expect(jsonBytes(state.history)).toBeLessThanOrEqual(CONVERSATION_BOUNDS.inputBytes);
    expect(state.omittedMessages).toBeGreaterThan(0);
    expect(state.omittedMessages! + state.history.length).toBe(42);
    expect(said(state.history.at(-2)!)).toBe(texts[20]);
    expect(said(state.history[0]!)).toBe(texts[state.omittedMessages! / 2]);
    expect(closed).toMatchObject({ closed: true, turns: 21, omittedMessages: state.omittedMessages });
    // The last turn's model was told how many earlier messages it was not given (none of these pairs fits the context budget).
    const last = modelInputs.at(-1)!;
    expect(said(last.messages[0]!)).toBe(
      '[40 earlier messages of this conversation are left out here, to keep what a turn is given within its size bounds; ask the user to repeat anything you need from them]',
    );
    expect(said(last.messages.at(-1)!)).toBe(texts[20]);
  }, 600_000);

  it('bounds sends of emoji, of characters JSON escapes and of lone surrogates by their encoded bytes, not their length', async () => {
    const kinds = ['😀'.repeat(50_000), '\u0001'.repeat(100_000), '"\\'.repeat(50_000), '\ud800'.repeat(100_000)];
    const texts = Array.from({ length: 12 }, (_, index) => kinds[index % kinds.length]!);
    // A context budget far beyond the byte bound: the turn's input is held by its bytes.
    const { answers, state, recorded, modelInputs } = await converse(texts, { maxTurnsPerRun: 3, contextBudgetChars: 100_000_000 });
    expect(answers).toEqual(texts.map(() => 'noted'));
    expect(recorded.carried.length).toBeGreaterThanOrEqual(3);
    for (const bytes of [...recorded.carried, ...recorded.turns]) expect(bytes).toBeLessThanOrEqual(CONVERSATION_BOUNDS.inputBytes);
    expect(jsonBytes(state.history)).toBeLessThanOrEqual(CONVERSATION_BOUNDS.inputBytes);
    for (const message of state.history) expect(jsonBytes(message)).toBeLessThanOrEqual(CONVERSATION_BOUNDS.messageBytes);
    // A message over its bound is kept cut short and says so; one within it is kept whole.
    const kept = state.history.filter((message) => message.role === 'user').map(said);
    const escaped = kept.find((text) => text.startsWith('\u0001'))!;
    expect(escaped).toMatch(/…\[cut short: \d+ of 100000 characters kept, the message was over the 262144-byte bound of one message\]$/);
    expect(kept).toContain(kinds[0]);
    expect(kept).toContain(kinds[2]);
    // The turns were given what fits and told what was left out.
    const last = modelInputs.at(-1)!;
    expect(said(last.messages[0]!)).toMatch(/^\[\d+ earlier messages of this conversation are left out here/);
    expect(last.messages.length).toBeGreaterThan(2);
  }, 600_000);

  it('refuses to start on settings too large to leave room for its history, and names them', async () => {
    const { env } = environment;
    const conversationId = `conversation-${randomUUID()}`;
    const taskQueue = `test-${randomUUID()}`;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const worker = await createWorker({
      config,
      connection: env.nativeConnection,
      activities: createActivities({ config, store: openSqliteStore(':memory:') }),
      workflowBundle: environment.workflowBundle,
    });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('conversation', {
        workflowId: conversationId,
        taskQueue,
        args: [{ conversationId, model: scripted([{ text: 'x'.repeat(300_000) }]) }],
      });
      const failure = await handle.result().catch((error: unknown) => error as Error & { cause?: Error });
      expect(failure.cause?.message).toMatch(
        /^conversation input: its settings \(everything but history, turns, tokens and omittedMessages\) take \d+ bytes of JSON; at most 262144 are taken$/,
      );
    });
  });
});
