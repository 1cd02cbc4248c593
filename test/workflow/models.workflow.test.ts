import type { StepMessage } from '../../common/kept-results';
import { openSqliteStore } from '../../intents/sqlite-store';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import type { AgentTurnResult } from '../../common/contract/turn';
import type { ModelStepInput } from '../../common/activity-types';
import { createWorker } from '../../worker/create-worker';
import { historyQuery, sendUpdate, closeConversationSignal } from '../../workflows/messages';
import { openaiReply, openaiStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { CONCURRENT_SENDS_SERIAL_HISTORY, keepHistory } from '../helpers/histories';
import { testConfig } from '../helpers/test-config';
import { scripted, useTurnRunner, useTimeSkippingEnvironment } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);
let provider: FakeProvider;

beforeAll(async () => {
  provider = await startFakeProvider();
});

afterAll(async () => {
  await provider.close();
});

const modelEnvironment = { env: { OPENAI_API_KEY: 'sk-test-openai-key' } };

function gptConfig(maxRetryDelay = '30s', onInterruptedStream = 'ask') {
  return testConfig({
    retry: { initialInterval: '100ms', maximumInterval: '1s' },
    model: {
      default: 'gpt',
      maxRetryDelay,
      onInterruptedStream,
      models: { gpt: { provider: 'openai', model: 'gpt-test', baseURL: provider.baseURL } },
    },
  });
}

/** Server time between a model step's scheduling and the start of its last attempt: the retry delays it waited. */
function retryWait(history: Awaited<ReturnType<typeof runTurn>>['history']): number {
  const events = history.events ?? [];
  const scheduled = events.find((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep')!;
  const started = events.find(
    (event) => event.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === scheduled.eventId?.toString(),
  )!;
  const millis = (event: typeof scheduled) => Number(event.eventTime!.seconds) * 1000 + Math.floor((event.eventTime!.nanos ?? 0) / 1e6);
  expect(started.activityTaskStartedEventAttributes?.attempt).toBe(2);
  return millis(started) - millis(scheduled);
}

describe('agentTurn with a streaming provider', () => {
  it('waits out a 429 with Retry-After: 2 before the retry, and completes', async () => {
    const before = provider.requests.length;
    provider.enqueue(
      { kind: 'error', status: 429, headers: { 'retry-after': '2' }, body: { error: { message: 'Rate limit reached' } } },
      { kind: 'stream', events: openaiStream.text(['All ', 'good.']) },
    );
    const { result, history } = await runTurn({ config: gptConfig(), modelEnvironment, input: { prompt: 'hello' } });
    expect(result).toMatchObject({ status: 'completed', answer: 'All good.', usage: { inputTokens: 11, outputTokens: 7 } });
    expect(provider.requests.length - before).toBe(2);
    const waited = retryWait(history);
    expect(waited).toBeGreaterThanOrEqual(2_000);
    expect(waited).toBeLessThan(3_000);
  });

  it('caps a Retry-After of 3600 s at model.maxRetryDelay', async () => {
    provider.enqueue(
      { kind: 'error', status: 429, headers: { 'retry-after': '3600' }, body: { error: { message: 'Rate limit reached' } } },
      { kind: 'stream', events: openaiStream.text(['Later.']) },
    );
    const { result, history } = await runTurn({ config: gptConfig('5s'), modelEnvironment, input: { prompt: 'hello' } });
    expect(result.status).toBe('completed');
    const waited = retryWait(history);
    expect(waited).toBeGreaterThanOrEqual(5_000);
    expect(waited).toBeLessThan(6_000);
  });

  it('with stream: false, retries a whole reply cut off on the way (none of it went out) and completes, nobody asked', async () => {
    const before = provider.requests.length;
    provider.enqueue(
      { ...openaiReply({ text: 'An answer whose body breaks off before it is whole.' }), resetAfterBytes: 80 },
      openaiReply({ text: 'The whole answer.', usage: { prompt_tokens: 20, completion_tokens: 4 } }),
    );
    const config = testConfig({
      retry: { initialInterval: '100ms', maximumInterval: '1s' },
      model: {
        default: 'batch',
        models: { batch: { provider: 'openai-compatible', model: 'batch-test', baseURL: provider.baseURL, stream: false } },
      },
    });
    const { result, history } = await runTurn({ config, modelEnvironment, input: { prompt: 'hello' } });
    expect(result).toMatchObject({ status: 'completed', answer: 'The whole answer.', modelInterruptions: [] });
    expect(provider.requests.length - before).toBe(2);
    expect(retryWait(history)).toBeGreaterThanOrEqual(100);
    // No wait for a person: no timer was started for a resume decision, and no partial text was kept.
    expect(result.partialText).toBeUndefined();
    expect((history.events ?? []).filter((event) => event.timerStartedEventAttributes)).toEqual([]);
  });

  // The waits for a person (model.onInterruptedStream "ask", the default) are tested in interrupted-streams.workflow.test.ts.
  it('with model.onInterruptedStream "fresh_step", never replays a stream that broke after 3 chunks: a fresh step follows, visibly, paid from the error budget', async () => {
    const before = provider.requests.length;
    provider.enqueue(
      { kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 4 },
      { kind: 'stream', events: openaiStream.text(['A fresh answer.']) },
    );
    const { result, state } = await runTurn({ config: gptConfig('30s', 'fresh_step'), modelEnvironment, input: { prompt: 'hello' } });
    expect(result).toMatchObject({ status: 'completed', answer: 'A fresh answer.', steps: 2 });
    expect(result.modelInterruptions).toEqual([
      { step: 0, message: expect.stringMatching(/after 3 chunks had gone out; not replayed/), decision: 'fresh_step' },
    ]);
    expect(state.modelInterruptions).toHaveLength(1);
    // One request per step: the broken step was not retried by itself.
    expect(provider.requests.length - before).toBe(2);
  });

  it('with "fresh_step", ends the turn with model_failed when the error budget cannot pay for a fresh step; the provider was called once', async () => {
    const before = provider.requests.length;
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 4 });
    const config = gptConfig('30s', 'fresh_step');
    const { result } = await runTurn({ config, modelEnvironment, input: { prompt: 'hello', limits: { errorBudget: 0 } } });
    expect(result.status).toBe('model_failed');
    expect(result.error).toMatchObject({ type: 'stream_interrupted', message: expect.stringMatching(/after 3 chunks/) });
    expect(result.partialText).toBe('one two three ');
    expect(provider.requests.length - before).toBe(1);
  });

  it('hands malformed tool-call JSON back as invalid_arguments; the model corrects itself on its next step', async () => {
    const before = provider.requests.length;
    provider.enqueue(
      { kind: 'stream', events: openaiStream.toolCall('get_document', ['{"id": "pricing-', 'plans"']) },
      { kind: 'stream', events: openaiStream.toolCall('get_document', ['{"id": "pricing-plans"}']) },
      { kind: 'stream', events: openaiStream.text(['Pro costs 8 EUR.']) },
    );
    const { result } = await runTurn({ config: gptConfig(), modelEnvironment, input: { prompt: 'price?' } });
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.code ?? null, event.executions])).toEqual([
      ['get_document', 'error', 'invalid_arguments', 0],
      ['get_document', 'success', null, 1],
    ]);
    expect(result).toMatchObject({
      status: 'completed',
      answer: 'Pro costs 8 EUR.',
      usage: { inputTokens: 13 + 13 + 11, outputTokens: 9 + 9 + 7 },
    });
    // What the model was sent on its second step: the code, in OpenAI's own tool-message format.
    const second = provider.requests[before + 1].body as { messages: Array<{ role: string; content: string }> };
    const toolMessage = second.messages.find((message) => message.role === 'tool');
    expect(JSON.parse(toolMessage!.content)).toMatchObject({ status: 'error', code: 'invalid_arguments' });
  });
});

describe('conversation', () => {
  it('keeps the whole history across continue-as-new, over 3 user messages', async () => {
    const { env, workflowBundle } = environment;
    const taskQueue = `test-${randomUUID()}`;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const activities = createActivities({ config, store: openSqliteStore(':memory:') });
    const modelInputs: ModelStepInput[] = [];
    const observed = {
      ...activities,
      modelStep: async (stepInput: ModelStepInput) => (modelInputs.push(structuredClone(stepInput)), activities.modelStep(stepInput)),
    };
    const worker = await createWorker({ config, connection: env.nativeConnection, activities: observed, workflowBundle });
    const conversationId = `conversation-${randomUUID()}`;
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('conversation', {
        workflowId: conversationId,
        taskQueue,
        args: [{ conversationId, maxTurnsPerRun: 2, model: scripted([{ text: 'noted' }]) }],
      });
      const firstRun = (await handle.describe()).runId;
      const answers: string[] = [];
      for (const text of ['My name is Ada.', 'I work on billing.', 'What do you know about me?']) {
        const conversationHandle = env.client.workflow.getHandle(conversationId);
        const result = (await conversationHandle.executeUpdate(sendUpdate, { args: [{ text }] })) as AgentTurnResult;
        answers.push(result.answer ?? '');
      }
      expect(answers).toEqual(['noted', 'noted', 'noted']);
      const latest = env.client.workflow.getHandle(conversationId);
      expect((await latest.describe()).runId).not.toBe(firstRun);
      const state = await latest.query(historyQuery);
      expect(state.turns).toBe(3);
      expect(
        state.history.map((message) => (message.role === 'user' ? message.content : message.role === 'assistant' ? message.text : '')),
      ).toEqual(['My name is Ada.', 'noted', 'I work on billing.', 'noted', 'What do you know about me?', 'noted']);
      // The third turn ran in the new run and still got the first two exchanges.
      const third = modelInputs.at(-1)!;
      expect(
        third.messages.filter((message) => message.role === 'user').map((message) => (message.role === 'user' ? message.content : '')),
      ).toEqual(['My name is Ada.', 'I work on billing.', 'What do you know about me?']);
      await latest.signal(closeConversationSignal);
      expect(await latest.result()).toMatchObject({ closed: true, turns: 3 });
    });
  });

  it('runs three sends made at once one after another: each turn sees the answers before it, and they complete in order', async () => {
    const { env, workflowBundle } = environment;
    const taskQueue = `test-${randomUUID()}`;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const activities = createActivities({ config, store: openSqliteStore(':memory:') });
    const reply = (prompt: string) => `noted: ${prompt}`;
    const said = (message: StepMessage) =>
      message.role === 'user' ? [message.content] : message.role === 'assistant' ? [message.text ?? ''] : [];
    const spoken = (messages: StepMessage[]) => messages.flatMap(said);
    // The scripted model answers each prompt with its own reply, so an answer shows which turn it came from.
    const modelInputs: ModelStepInput[] = [];
    const modelStep = async (stepInput: ModelStepInput) => {
      modelInputs.push(structuredClone(stepInput));
      const prompt = spoken(stepInput.messages.filter((message) => message.role === 'user')).at(-1) ?? '';
      return activities.modelStep({ ...stepInput, model: scripted([{ text: reply(prompt) }]) });
    };
    const observed = { ...activities, modelStep };
    const worker = await createWorker({ config, connection: env.nativeConnection, activities: observed, workflowBundle });
    const conversationId = `conversation-${randomUUID()}`;
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('conversation', { workflowId: conversationId, taskQueue, args: [{ conversationId }] });
      const prompts = ['My name is Ada.', 'I work on billing.', 'What do you know about me?'];
      const results = await Promise.all(
        prompts.map((text, index) => handle.executeUpdate(sendUpdate, { args: [{ text }], updateId: `send-${index}` })),
      );
      expect(results.map((result) => result.answer)).toEqual(prompts.map(reply));

      // The order the server accepted the three sends in is the order the turns must run in.
      const events = (await handle.fetchHistory()).events ?? [];
      const accepted = events.flatMap(
        ({ workflowExecutionUpdateAcceptedEventAttributes: accept }) => accept?.acceptedRequest?.meta?.updateId ?? [],
      );
      const completed = events.flatMap(({ workflowExecutionUpdateCompletedEventAttributes: update }) => update?.meta?.updateId ?? []);
      expect([...accepted].sort()).toEqual(['send-0', 'send-1', 'send-2']);
      expect(completed).toEqual(accepted);
      const inOrder = accepted.map((updateId) => prompts[Number(updateId.slice('send-'.length))]);
      const exchanges = inOrder.flatMap((prompt) => [prompt, reply(prompt)]);

      // Turn n was sent the n - 1 exchanges before it, whole and in order, then its own prompt.
      expect(modelInputs).toHaveLength(3);
      inOrder.forEach((prompt, index) => {
        const input = modelInputs.find((candidate) => spoken(candidate.messages).at(-1) === prompt)!;
        expect(spoken(input.messages), `turn ${index + 1}`).toEqual([...exchanges.slice(0, 2 * index), prompt]);
      });
      const state = await handle.query(historyQuery);
      expect(state.turns).toBe(3);
      expect(spoken(state.history)).toEqual(exchanges);
      await handle.signal(closeConversationSignal);
      expect(await handle.result()).toMatchObject({ closed: true, turns: 3 });
      keepHistory(CONCURRENT_SENDS_SERIAL_HISTORY, await handle.fetchHistory());
    });
  });
});
