import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { createWorker } from '../../worker/create-worker';
import { openaiStream, startFakeProvider, type FakeProvider, type FakeReply } from '../helpers/fake-provider';
import { startOtlpReceiver } from '../helpers/otlp-receiver';
import { startTimeSkippingServer } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';

// The worker's API key: no built-in secret shape matches it, only its value (the variable apiKeyEnv names) does.
const KEY_VARIABLE = 'TOLLGATE_EXITS_TEST_KEY';
const API_KEY = 'tgk_live_9f8e7d6c5b4a39281706';
// A customer number only the config's redact.patterns entry knows.
const CUSTOMER = 'cust-482913';
const SECRETS = [API_KEY, CUSTOMER];

const logs: LogEntry[] = [];
let env: TestWorkflowEnvironment;
let provider: FakeProvider;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;

beforeAll(async () => {
  // This file's own runtime logger, installed before anything starts the runtime: every line the worker logs is kept.
  Runtime.install({ logger: new DefaultLogger('DEBUG', (entry) => logs.push(entry)) });
  process.env[KEY_VARIABLE] = API_KEY;
  [env, provider, receiver] = await Promise.all([startTimeSkippingServer(), startFakeProvider(), startOtlpReceiver()]);
});

afterAll(async () => {
  delete process.env[KEY_VARIABLE];
  await env?.teardown();
  await provider?.close();
  await receiver?.close();
});

function leakyConfig(): TollgateConfig {
  const base = testConfig({
    model: {
      default: 'leaky',
      models: { leaky: { provider: 'openai', model: 'gpt-test', apiKeyEnv: KEY_VARIABLE, baseURL: provider.baseURL } },
      onInterruptedStream: 'stop',
    },
    redact: { patterns: ['cust-[0-9]{6}'] },
    telemetry: { otlp: { endpoint: receiver.url, serviceName: 'tollgate-exits' } },
  });
  return { ...base, temporal: { ...base.temporal, taskQueue: `exits-${randomUUID()}` } };
}

/** A payload's JSON decoded in place, so that a search sees what details and inputs hold (they are base64 on the wire). */
function decoded(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decoded);
  if (!value || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  if (record.metadata && typeof record.metadata === 'object' && 'data' in record) {
    const data = record.data;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : Buffer.from(data as Uint8Array);
    return bytes.toString('utf8');
  }
  return Object.fromEntries(Object.entries(record).map(([key, item]) => [key, decoded(item)]));
}

/** The log lines as text, errors with their message, stack, details and causes (an object met twice is written once). */
function logText(): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(
    logs.map(({ message, meta }) => ({ message, meta })),
    (_key, value: unknown) => {
      if (typeof value === 'bigint') return String(value);
      if (!value || typeof value !== 'object') return value;
      if (seen.has(value)) return '[seen]';
      seen.add(value);
      return value instanceof Error
        ? { name: value.name, message: value.message, stack: value.stack, cause: value.cause, ...(value as object) }
        : value;
    },
  );
}

/** Which of the secrets a text holds. */
function found(text: string): string[] {
  return SECRETS.filter((secret) => text.includes(secret));
}

/** Runs one turn on the leaky model with the provider answering `replies`; everything that left the worker, as text. */
async function turnWith(replies: FakeReply[]) {
  const config = leakyConfig();
  const before = provider.requests.length;
  const logsBefore = logs.length;
  provider.enqueue(...replies);
  const worker = await createWorker({ config, connection: env.nativeConnection });
  const workflowId = `turn-${randomUUID()}`;
  const taskId = `task-${randomUUID()}`;
  const result: AgentTurnResult = await worker.runUntil(async () => {
    const handle = await env.client.workflow.start('agentTurn', {
      workflowId,
      taskQueue: config.temporal.taskQueue,
      args: [{ taskId, prompt: 'what does the refund policy say?' }],
    });
    return handle.result();
  });
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  const turn = receiver.spans.find((span) => span.name === 'invoke_agent tollgate' && span.attributes['gen_ai.conversation.id'] === taskId);
  const spans = receiver.spans.filter((span) => span.traceId === turn?.traceId);
  const requests = provider.requests.slice(before);
  return {
    result,
    requests,
    spans,
    texts: {
      result: JSON.stringify(result),
      history: JSON.stringify(decoded(history)),
      spans: JSON.stringify(spans),
      logs: logText(),
    },
    newLogs: logs.slice(logsBefore),
  };
}

/** A provider error body that echoes the key it was sent and the customer the prompt named, as some providers do. */
function echoing(status: number): FakeReply {
  return {
    kind: 'error',
    status,
    body: { error: { message: `Incorrect API key provided: ${API_KEY} (request for ${CUSTOMER})`, type: 'invalid_request_error' } },
  };
}

describe('the model step redacts every text that leaves it', () => {
  it('a 401 that echoes the API key: model_error, and the key is nowhere in the result, the history, the spans or the log', async () => {
    const seen = await turnWith([echoing(401)]);
    // The key was really in play: the provider received it, and its answer carried it back.
    expect(seen.requests).toHaveLength(1);
    expect(String(seen.requests[0].headers.authorization)).toBe(`Bearer ${API_KEY}`);
    expect(seen.result.status).toBe('model_failed');
    expect(seen.result.error).toMatchObject({ type: 'model_error' });
    expect(seen.result.error?.message).toContain('Incorrect API key provided: [redacted] (request for [redacted])');
    for (const [where, text] of Object.entries(seen.texts)) expect({ where, secrets: found(text) }).toEqual({ where, secrets: [] });
    // The span of the request says what failed, with the stable type and the redacted text.
    const chat = seen.spans.find((span) => span.name === 'chat gpt-test');
    expect(chat?.attributes['error.type']).toBe('model_error');
    expect(chat?.status).toMatchObject({ code: 2, message: expect.stringContaining('Incorrect API key provided: [redacted]') });
    // The AI SDK's `openai.chat` is the conventions' `openai`.
    expect(chat?.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-test' });
    // The worker logged the failure (and so the search above looked at it).
    expect(seen.newLogs.some((entry) => entry.message === 'Activity failed')).toBe(true);
  });

  it('a 503 that echoes the key, retried until the step gives up: model_unavailable, redacted everywhere', async () => {
    const seen = await turnWith([echoing(503), echoing(503), echoing(503), echoing(503)]);
    expect(seen.requests).toHaveLength(4);
    expect(seen.result.status).toBe('model_failed');
    expect(seen.result.error).toMatchObject({ type: 'model_unavailable' });
    expect(seen.result.error?.message).toContain('[redacted]');
    for (const [where, text] of Object.entries(seen.texts)) expect({ where, secrets: found(text) }).toEqual({ where, secrets: [] });
    expect(seen.newLogs.filter((entry) => entry.message === 'Activity failed').length).toBeGreaterThanOrEqual(4);
  });

  it('a stream cut after chunks that carried the key: stream_interrupted, its partial text redacted in the history and the result', async () => {
    const events = openaiStream.text(['The key is ', API_KEY, ` for ${CUSTOMER}`, ' and more', ' text']);
    const seen = await turnWith([{ kind: 'stream', events, resetAfter: 5 }]);
    expect(seen.requests).toHaveLength(1);
    expect(seen.result.status).toBe('model_failed');
    expect(seen.result.error).toMatchObject({ type: 'stream_interrupted' });
    // The partial text went out (heartbeats, failure details) and was redacted on its way.
    expect(seen.texts.history).toContain('The key is [redacted] for [redacted]');
    for (const [where, text] of Object.entries(seen.texts)) expect({ where, secrets: found(text) }).toEqual({ where, secrets: [] });
  });
});
