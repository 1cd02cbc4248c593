import { createGoogle } from '@ai-sdk/google';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { AgentTurnResult } from '../../common/contract/turn';
import { parseConfig } from '../../config/load-config';
import { createWorker } from '../../worker/create-worker';
import { geminiStream, mistralStream, startFakeProvider, type FakeProvider, type FakeReply } from '../helpers/fake-provider';
import { testConfig } from '../helpers/test-config';
import { useTimeSkippingEnvironment, useTurnRunner } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);
let provider: FakeProvider;

beforeAll(async () => {
  provider = await startFakeProvider();
});

afterAll(async () => {
  await provider.close();
});

const modelEnvironment = { env: { GEMINI_TEST_KEY: 'gemini-test-key', MISTRAL_TEST_KEY: 'mistral-test-key' } };

/** Both provider packages, as a person would configure them, pointed at the loopback server. */
function packageConfig(errorBudget?: number) {
  return testConfig({
    retry: { initialInterval: '100ms', maximumInterval: '1s' },
    ...(errorBudget === undefined ? {} : { limits: { errorBudget } }),
    model: {
      default: 'gemini',
      models: {
        gemini: { provider: '@ai-sdk/google', model: 'gemini-test', apiKeyEnv: 'GEMINI_TEST_KEY', options: { baseURL: provider.baseURL } },
        mistral: {
          provider: '@ai-sdk/mistral',
          model: 'mistral-test',
          apiKeyEnv: 'MISTRAL_TEST_KEY',
          options: { baseURL: provider.baseURL },
        },
      },
    },
  });
}

/** What each provider speaks: its replies, where it is asked, how its key travels, and how it sends a tool result back. */
const PROVIDERS = [
  {
    name: 'gemini',
    toolCall: geminiStream.functionCall('get_document', { id: 'pricing-plans' }),
    answer: geminiStream.text(['Pro costs ', '8 EUR.']),
    broken: { kind: 'stream', events: geminiStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 2 } as FakeReply,
    unavailable: { kind: 'error', status: 503, body: { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } } },
    usage: { inputTokens: 19 + 17, outputTokens: 6 + 5 },
    path: '/v1/models/gemini-test:streamGenerateContent?alt=sse',
    key: (headers: Record<string, unknown>) => headers['x-goog-api-key'],
    toolResult: (body: unknown) => {
      const contents = (body as { contents: Array<{ parts: Array<{ functionResponse?: { name: string; response: unknown } }> }> }).contents;
      return contents.flatMap((content) => content.parts).find((part) => part.functionResponse)?.functionResponse;
    },
  },
  {
    name: 'mistral',
    toolCall: mistralStream.toolCall('get_document', '{"id": "pricing-plans"}'),
    answer: mistralStream.text(['Pro costs ', '8 EUR.']),
    broken: { kind: 'stream', events: mistralStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 3 } as FakeReply,
    unavailable: { kind: 'error', status: 503, body: { object: 'error', message: 'Service unavailable', type: 'service_unavailable' } },
    usage: { inputTokens: 16 + 15, outputTokens: 8 + 4 },
    path: '/v1/chat/completions',
    key: (headers: Record<string, unknown>) => headers.authorization,
    toolResult: (body: unknown) => (body as { messages: Array<{ role: string; content: string }> }).messages.find((m) => m.role === 'tool'),
  },
] as const;

describe.each(PROVIDERS)('a provider package: $name', (wire) => {
  it('runs a turn with a tool call through it, sums its usage, and sends the result back in its own format', async () => {
    const before = provider.requests.length;
    provider.enqueue({ kind: 'stream', events: [...wire.toolCall] }, { kind: 'stream', events: [...wire.answer] });
    const { result } = await runTurn({ config: packageConfig(), modelEnvironment, input: { prompt: 'price?', model: wire.name } });
    expect(result).toMatchObject({ status: 'completed', answer: 'Pro costs 8 EUR.', steps: 2, usage: wire.usage });
    expect(result.toolCalls.map((event) => [event.callId, event.tool, event.status, event.executions])).toEqual([
      ['call-0-0', 'get_document', 'success', 1],
    ]);
    const sent = provider.requests.slice(before);
    expect(sent.map((request) => request.path)).toEqual([wire.path, wire.path]);
    // The key comes from the variable apiKeyEnv names.
    expect(String(wire.key(sent[0].headers))).toContain(`${wire.name}-test-key`);
    expect(JSON.stringify(wire.toolResult(sent[1].body))).toContain('Pro');
  });

  it('retries a 503 before the first chunk, and completes', async () => {
    const before = provider.requests.length;
    provider.enqueue(wire.unavailable as FakeReply, { kind: 'stream', events: [...wire.answer] });
    const { result } = await runTurn({ config: packageConfig(), modelEnvironment, input: { prompt: 'price?', model: wire.name } });
    expect(result).toMatchObject({ status: 'completed', answer: 'Pro costs 8 EUR.', modelInterruptions: [] });
    expect(provider.requests.length - before).toBe(2);
  });

  it('never retries a stream cut off after 2 chunks by itself: with no error budget the turn ends model_failed', async () => {
    const before = provider.requests.length;
    provider.enqueue(wire.broken);
    const { result } = await runTurn({ config: packageConfig(0), modelEnvironment, input: { prompt: 'price?', model: wire.name } });
    expect(result.status).toBe('model_failed');
    expect(result.error).toMatchObject({ type: 'stream_interrupted', message: expect.stringMatching(/after 2 chunks had gone out/) });
    expect(provider.requests.length - before).toBe(1);
  });
});

describe('models built in code', () => {
  it('runs a turn on a LanguageModel given to createWorker({ models }), selected by its name', async () => {
    const { env, workflowBundle } = environment;
    const taskQueue = `test-${randomUUID()}`;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const store = openSqliteStore(':memory:');
    const coded = createGoogle({ apiKey: 'coded-key', baseURL: provider.baseURL })('gemini-test');
    const worker = await createWorker({ config, connection: env.nativeConnection, store, models: { coded }, workflowBundle });
    const before = provider.requests.length;
    provider.enqueue({ kind: 'stream', events: geminiStream.text(['From ', 'code.']) });
    const result = (await worker.runUntil(
      env.client.workflow.execute('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue,
        args: [{ taskId: 'task-coded', prompt: 'hello', model: 'coded' }],
      }),
    )) as AgentTurnResult;
    await store.close();
    expect(result).toMatchObject({ status: 'completed', answer: 'From code.', usage: { inputTokens: 17, outputTokens: 5 } });
    expect(provider.requests[before].headers['x-goog-api-key']).toBe('coded-key');
  });

  it('refuses a code model whose name the config already has, and one that is not a v4 language model', () => {
    const config = testConfig();
    const store = openSqliteStore(':memory:');
    const coded = createGoogle({ apiKey: 'k', baseURL: provider.baseURL })('gemini-test');
    expect(() => createActivities({ config, store, models: { scripted: coded } })).toThrow(
      `model "scripted" is both in the config's model list and among the models built in code`,
    );
    const old = { ...coded, specificationVersion: 'v3', doStream: coded.doStream };
    expect(() => createActivities({ config, store, models: { old: old as unknown as typeof coded } })).toThrow(
      'createWorker({ models }): model "old": its specificationVersion is v3; Tollgate takes v4 models (AI SDK 7 providers)',
    );
  });
});

describe('provider package config', () => {
  const parse = (entry: Record<string, unknown>) =>
    parseConfig({ model: { default: 'm', models: { m: entry } } }, { source: 'x.yaml', baseDir: '/', env: {} });

  it('refuses a key in the options, a bad package name, and an unknown key of a built-in provider', () => {
    expect(() => parse({ provider: '@ai-sdk/google', model: 'g', options: { apiKey: 'secret' } })).toThrow(
      'x.yaml: model.models.m.options: a key never goes into the config: name its environment variable in apiKeyEnv',
    );
    expect(() => parse({ provider: 'Not A Package', model: 'g' })).toThrow(
      'x.yaml: model.models.m.provider: expected a built-in provider or an npm package name such as @ai-sdk/google',
    );
    expect(() => parse({ provider: 'openai', model: 'g', factory: 'createOpenAI' })).toThrow('unknown key "model.models.m.factory"');
  });

  it('names a package that is not installed, and a package whose factory is ambiguous, when the worker builds its models', () => {
    const store = openSqliteStore(':memory:');
    const missing = { ...testConfig(), model: parse({ provider: '@ai-sdk/not-installed', model: 'g' }).model };
    expect(() => createActivities({ config: missing, store })).toThrow(
      /model "m" \(provider @ai-sdk\/not-installed\): the package cannot be loaded \(.*\); is it installed\?/,
    );
    const ambiguous = { ...testConfig(), model: parse({ provider: '@ai-sdk/provider-utils', model: 'g' }).model };
    expect(() => createActivities({ config: ambiguous, store })).toThrow(
      /model "m" \(provider @ai-sdk\/provider-utils\): name its factory in "factory" \(the package's create\.\.\. functions: create/,
    );
  });
});
