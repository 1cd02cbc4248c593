import { openSqliteStore } from '../../intents/sqlite-store';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { parseRetryAfter } from '../../activities/models/model-errors';
import type { StreamProgress } from '../../common/activity-types';
import type { ModelStepInput, ModelStepResult } from '../../common/activity-types';
import { keptArguments } from '../../common/call-arguments';
import { toModelPrompt } from '../../activities/models/model-prompt';
import { argsDigest } from '../../tools/canonical-json';
import { ConfigError } from '../../config/load-config';
import { anthropicStream, openaiReply, openaiStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { testConfig } from '../helpers/test-config';

let provider: FakeProvider;

beforeAll(async () => {
  provider = await startFakeProvider();
});

afterAll(async () => {
  await provider.close();
});

const env = { OPENAI_API_KEY: 'sk-test-openai-key', ANTHROPIC_API_KEY: 'sk-ant-test' };

function modelStepFor(modelName: 'gpt' | 'claude' | 'local' | 'batch') {
  const config = testConfig({
    model: {
      default: modelName,
      maxRetryDelay: '30s',
      models: {
        gpt: { provider: 'openai', model: 'gpt-test', baseURL: provider.baseURL, maxOutputTokens: 321 },
        claude: { provider: 'anthropic', model: 'claude-test', baseURL: provider.baseURL },
        local: { provider: 'openai-compatible', model: 'llama-test', baseURL: provider.baseURL },
        batch: { provider: 'openai-compatible', model: 'batch-test', baseURL: provider.baseURL, stream: false },
      },
    },
  });
  return createActivities({ config, store: openSqliteStore(':memory:'), modelEnvironment: { env } }).modelStep;
}

const input: ModelStepInput = { taskId: 'task-m', step: 0, messages: [{ role: 'user', content: 'What is the refund policy?' }] };

async function run(modelName: 'gpt' | 'claude' | 'local' | 'batch', environment = new MockActivityEnvironment()): Promise<ModelStepResult> {
  return environment.run(modelStepFor(modelName), input);
}

async function failure(
  modelName: 'gpt' | 'claude' | 'local' | 'batch',
  environment = new MockActivityEnvironment(),
): Promise<ApplicationFailure> {
  return run(modelName, environment).then(
    () => {
      throw new Error('the model step did not fail');
    },
    (error: ApplicationFailure) => error,
  );
}

describe('modelStep with AI SDK providers', () => {
  it('streams text from OpenAI, sends the tools as JSON schema, and reports the provider usage', async () => {
    const before = provider.requests.length;
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['Annual plans ', 'are refunded ', 'within 30 days.']) });
    const environment = new MockActivityEnvironment();
    const beats: StreamProgress[] = [];
    environment.on('heartbeat', (details: StreamProgress) => beats.push(details));
    const result = await run('gpt', environment);
    expect(result).toEqual({
      text: 'Annual plans are refunded within 30 days.',
      toolCalls: [],
      usage: { inputTokens: 11, outputTokens: 7 },
      // The step kept the one message it was sent: the next step is sent only what follows it.
      transcript: { count: 1, digest: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    expect(beats.at(-1)).toEqual({ chunks: 3, text: 'Annual plans are refunded within 30 days.' });
    const sent = provider.requests[before];
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.body).toMatchObject({
      model: 'gpt-test',
      stream: true,
      max_tokens: 321,
      tools: expect.arrayContaining([expect.objectContaining({ function: expect.objectContaining({ name: 'get_document' }) })]),
    });
  });

  it('turns an OpenAI tool call streamed in pieces into a checked call', async () => {
    provider.enqueue({ kind: 'stream', events: openaiStream.toolCall('get_document', ['{"id":', '"refund-policy"}']) });
    const result = await run('gpt');
    expect(result.toolCalls).toEqual([
      expect.objectContaining({
        callId: 'call-0-0',
        tool: 'get_document',
        args: { id: 'refund-policy' },
        policy: expect.objectContaining({ effect: 'read' }),
      }),
    ]);
    expect(result.toolCalls[0].refusal).toBeUndefined();
  });

  it('reads Anthropic text and tool_use streams', async () => {
    provider.enqueue({ kind: 'stream', events: anthropicStream.text(['Hello ', 'there.']) });
    await expect(run('claude')).resolves.toEqual({
      text: 'Hello there.',
      toolCalls: [],
      usage: { inputTokens: 21, outputTokens: 8 },
      transcript: { count: 1, digest: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    provider.enqueue({ kind: 'stream', events: anthropicStream.toolUse('search_local_sources', ['{"query"', ': "refunds"}']) });
    const result = await run('claude');
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'search_local_sources', args: { query: 'refunds' } })]);
    expect(provider.requests.at(-1)?.path).toBe('/v1/messages');
    // The config's default cap for Anthropic reaches the request; the task id is never written into the prompt.
    expect(provider.requests.at(-1)?.body).toMatchObject({ max_tokens: 4096 });
    expect(JSON.stringify(provider.requests.at(-1)?.body)).not.toContain('task-m');
  });

  it('speaks to an OpenAI-compatible server the same way', async () => {
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['local ', 'answer']) });
    await expect(run('local')).resolves.toMatchObject({ text: 'local answer' });
  });

  it('gives malformed tool-call JSON back as invalid_arguments, never executed', async () => {
    provider.enqueue({ kind: 'stream', events: openaiStream.toolCall('get_document', ['{"id": "refund-', 'policy"']) });
    const result = await run('gpt');
    expect(result.toolCalls[0]).toMatchObject({
      tool: 'get_document',
      refusal: { code: 'invalid_arguments', message: expect.stringMatching(/^the arguments are not valid JSON/) },
    });
  });

  it('retries a 429 after its Retry-After of 2 s', async () => {
    provider.enqueue({
      kind: 'error',
      status: 429,
      headers: { 'retry-after': '2' },
      body: { error: { message: 'Rate limit reached', type: 'rate_limit_error' } },
    });
    const error = await failure('gpt');
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ type: 'model_unavailable', nonRetryable: false, nextRetryDelay: 2000 });
  });

  it('caps a Retry-After of 3600 s at the configured maximum', async () => {
    provider.enqueue({
      kind: 'error',
      status: 429,
      headers: { 'retry-after': '3600' },
      body: { error: { message: 'Rate limit reached' } },
    });
    await expect(failure('gpt')).resolves.toMatchObject({ type: 'model_unavailable', nextRetryDelay: 30_000 });
  });

  it('retries 529 and 503 before the first chunk, with the policy backoff when no Retry-After is given', async () => {
    provider.enqueue({ kind: 'error', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    await expect(failure('claude')).resolves.toMatchObject({ type: 'model_unavailable', nonRetryable: false, nextRetryDelay: undefined });
    provider.enqueue({ kind: 'error', status: 503, body: { error: { message: 'unavailable' } } });
    await expect(failure('gpt')).resolves.toMatchObject({ type: 'model_unavailable', nonRetryable: false });
  });

  it('does not retry a request the provider refuses', async () => {
    provider.enqueue({ kind: 'error', status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } });
    await expect(failure('gpt')).resolves.toMatchObject({ type: 'model_error', nonRetryable: true });
  });

  it('never retries a stream cut off after chunks went out, and calls the provider once', async () => {
    const before = provider.requests.length;
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 4 });
    const error = await failure('gpt');
    expect(error).toMatchObject({ type: 'stream_interrupted', nonRetryable: true });
    expect(error.message).toMatch(/after 3 chunks had gone out/);
    expect(provider.requests.length - before).toBe(1);
  });

  it('takes a stream that closes cleanly without its completion signal as broken, never as a whole reply', async () => {
    const before = provider.requests.length;
    const incomplete = "the model provider's answer ended without its completion signal";
    // OpenAI: three text deltas, then the response ends with no finish_reason and no [DONE] (finish reason interrupted).
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']).slice(0, 4) });
    const cut = await failure('gpt');
    expect(cut).toMatchObject({ type: 'stream_interrupted', nonRetryable: true });
    expect(cut.message).toContain(`after 3 chunks had gone out; not replayed: ${incomplete}`);
    expect(cut.details).toEqual([{ chunks: 3, text: 'one two three ' }]);
    // Anthropic: two text deltas and no message_delta or message_stop.
    provider.enqueue({ kind: 'stream', events: anthropicStream.text(['one ', 'two ', 'three']).slice(0, 4) });
    await expect(failure('claude')).resolves.toMatchObject({
      type: 'stream_interrupted',
      message: expect.stringContaining('after 2 chunks'),
    });
    // Before any chunk went out the step may be asked again: OpenAI's opening delta alone, and Anthropic's
    // message_start alone (its stream then has no finish part at all).
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['never sent']).slice(0, 1) });
    await expect(failure('gpt')).resolves.toMatchObject({ type: 'model_unavailable', nonRetryable: false, message: incomplete });
    provider.enqueue({ kind: 'stream', events: anthropicStream.text(['never sent']).slice(0, 1) });
    await expect(failure('claude')).resolves.toMatchObject({ type: 'model_unavailable', nonRetryable: false, message: incomplete });
    expect(provider.requests.length - before).toBe(4);
  });

  it('asks a model configured stream: false for the whole reply at once: text, tool calls and usage, no live text', async () => {
    const before = provider.requests.length;
    provider.enqueue(
      openaiReply({
        text: 'Looking it up.',
        toolCalls: [{ name: 'get_document', args: { id: 'refund-policy' } }],
        usage: { prompt_tokens: 40, completion_tokens: 9 },
      }),
    );
    const environment = new MockActivityEnvironment();
    const beats: StreamProgress[] = [];
    environment.on('heartbeat', (details: StreamProgress) => beats.push(details));
    const result = await run('batch', environment);
    expect(result.text).toBe('Looking it up.');
    expect(result.usage).toEqual({ inputTokens: 40, outputTokens: 9 });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({
        callId: 'call-0-0',
        tool: 'get_document',
        args: { id: 'refund-policy' },
        policy: expect.objectContaining({ effect: 'read' }),
      }),
    ]);
    expect(result.toolCalls[0].refusal).toBeUndefined();
    expect(provider.requests.length - before).toBe(1);
    expect(provider.requests.at(-1)!.body).not.toMatchObject({ stream: true });
    // Nothing went out before the reply was whole: no heartbeat ever counted a chunk.
    expect(beats.filter((beat) => beat.chunks > 0)).toEqual([]);
  });

  it('retries a stream: false reply cut off halfway, since none of it went out, and never calls it interrupted', async () => {
    const before = provider.requests.length;
    provider.enqueue({ ...openaiReply({ text: 'A long answer that is cut off halfway through its body.' }), resetAfterBytes: 60 });
    const error = await failure('batch');
    expect(error).toMatchObject({ type: 'model_unavailable', nonRetryable: false });
    expect(provider.requests.length - before).toBe(1);
    // The next attempt asks again and gets the whole reply.
    provider.enqueue(openaiReply({ text: 'The whole answer.' }));
    await expect(run('batch', new MockActivityEnvironment({ attempt: 2 }))).resolves.toMatchObject({ text: 'The whole answer.' });
    expect(provider.requests.length - before).toBe(2);
  });

  it('does not replay a step whose earlier attempt (on a worker that died) had streamed chunks', async () => {
    const before = provider.requests.length;
    const environment = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { chunks: 3, text: 'one two three' } });
    const error = await failure('gpt', environment);
    expect(error).toMatchObject({ type: 'stream_interrupted', nonRetryable: true });
    expect(provider.requests.length).toBe(before);
  });

  it('refuses to start without an API key, naming the variable', () => {
    const config = testConfig({ model: { default: 'gpt', models: { gpt: { provider: 'openai', model: 'gpt-test' } } } });
    expect(() => createActivities({ config, store: openSqliteStore(':memory:'), modelEnvironment: { env: {} } })).toThrow(ConfigError);
    expect(() => createActivities({ config, store: openSqliteStore(':memory:'), modelEnvironment: { env: {} } })).toThrow(
      'model "gpt": the environment variable OPENAI_API_KEY (its apiKeyEnv) is not set',
    );
  });
});

describe('large arguments of a call that ran', () => {
  const digest = 'sha256:abc';

  it('are kept whole up to 2,000 characters per string and 4,096 of JSON, and by reference past either bound', () => {
    const small = { path: 'a.md', content: 'x'.repeat(2_000) };
    expect(keptArguments(small, digest)).toBe(small);
    expect(keptArguments({ path: 'a.md', content: 'x'.repeat(2_001) }, digest)).toEqual({ $ref: 'args', argsDigest: digest, chars: 2_029 });
    // A long string deep inside a list counts too.
    expect(keptArguments({ items: [{ text: 'y'.repeat(2_001) }] }, digest)).toMatchObject({ $ref: 'args' });
    const manyShort = { lines: Array.from({ length: 500 }, (_, index) => `line ${index}`) };
    expect(JSON.stringify(manyShort).length).toBeGreaterThan(4_096);
    expect(keptArguments(manyShort, digest)).toEqual({ $ref: 'args', argsDigest: digest, chars: JSON.stringify(manyShort).length });
    expect(keptArguments('raw text that is not JSON', digest)).toBe('raw text that is not JSON');
  });

  it('reach the model as a note naming the call, the size and the digest, and never as their text', () => {
    const content = 'draft text '.repeat(10_000);
    const args = { path: 'brief.md', content };
    const prompt = toModelPrompt([
      { role: 'user', content: 'save it' },
      { role: 'assistant', toolCalls: [{ callId: 'call-0-0', tool: 'save_draft', args: keptArguments(args, argsDigest(args)) }] },
      { role: 'tool', callId: 'call-0-0', tool: 'save_draft', result: { status: 'success', data: { path: 'task-1/brief.md' } } },
    ]);
    const call = prompt[2].role === 'assistant' ? prompt[2].content[0] : undefined;
    const chars = JSON.stringify(args).length.toLocaleString('en-US');
    expect(call).toEqual({
      type: 'tool-call',
      toolCallId: 'call-0-0',
      toolName: 'save_draft',
      input: { omitted: `[arguments of call call-0-0: ${chars} characters, digest ${argsDigest(args)}, omitted]` },
    });
    expect(JSON.stringify(prompt)).not.toContain('draft text draft text');
  });

  it('are sent to a provider as that note, in a well-formed request', async () => {
    const before = provider.requests.length;
    provider.enqueue({ kind: 'stream', events: openaiStream.text(['Saved.']) });
    const args = { path: 'brief.md', content: 'z'.repeat(50_000) };
    const messages: ModelStepInput['messages'] = [
      { role: 'user', content: 'save it' },
      { role: 'assistant', toolCalls: [{ callId: 'call-0-0', tool: 'save_draft', args: keptArguments(args, argsDigest(args)) }] },
      { role: 'tool', callId: 'call-0-0', tool: 'save_draft', result: { status: 'success', data: { path: 'task-m/brief.md' } } },
    ];
    const result = await new MockActivityEnvironment().run(modelStepFor('gpt'), { ...input, step: 1, messages });
    expect(result).toMatchObject({ text: 'Saved.' });
    const sent = JSON.stringify(provider.requests[before].body);
    expect(sent).toContain('[arguments of call call-0-0: 50,032 characters, digest');
    expect(sent).not.toContain('zzzz');
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds, milliseconds and HTTP dates', () => {
    const now = Date.parse('2026-11-30T12:00:00Z');
    expect(parseRetryAfter({ 'Retry-After': '2' }, now)).toBe(2000);
    expect(parseRetryAfter({ 'retry-after-ms': '1500' }, now)).toBe(1500);
    expect(parseRetryAfter({ 'retry-after': 'Mon, 30 Nov 2026 12:00:05 GMT' }, now)).toBe(5000);
    expect(parseRetryAfter({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
