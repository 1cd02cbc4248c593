import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOnLoopback } from '../../client/demo/loopback-http';
import { DEFAULT_MODEL_MAX_RESPONSE_BYTES } from '../../activities/models/model-config';
import { parseConfig } from '../../config/load-config';
import { resumeSignal } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { useTurnRunner, waitForState } from '../helpers/turn-runner';

const MAX_RESPONSE_BYTES = 256 * 1024;

/** One connection the endless provider served: how much it wrote, and whether the worker hung up. */
interface Served {
  bytes: number;
  closedByClient: boolean;
}

/**
 * A loopback provider whose every answer never ends: `text` streams OpenAI chunks of text for
 * ever, `padding` streams SSE comment lines for ever (no event, so no chunk ever reaches the
 * model step). It writes as fast as the socket takes it, until the other side closes.
 */
async function startEndlessProvider(kind: () => 'text' | 'padding') {
  const served: Served[] = [];
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const connection: Served = { bytes: 0, closedByClient: false };
      served.push(connection);
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk =
        kind() === 'text'
          ? `data: ${JSON.stringify({
              id: 'c',
              object: 'chat.completion.chunk',
              created: 1,
              model: 'gpt-endless',
              choices: [{ index: 0, delta: { content: 'more and more text ' }, finish_reason: null }],
            })}\n\n`
          : `: ${'padding '.repeat(100)}\n`;
      let open = true;
      response.on('close', () => {
        open = false;
        connection.closedByClient = !response.writableFinished;
      });
      const pump = () => {
        while (open) {
          connection.bytes += Buffer.byteLength(chunk);
          if (!response.write(chunk)) {
            response.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
  });
  const listener = await listenOnLoopback(server);
  return { baseURL: `http://127.0.0.1:${listener.port}/v1`, served, close: listener.close };
}

const runTurn = useTurnRunner();
let kind: 'text' | 'padding' = 'text';
let provider: Awaited<ReturnType<typeof startEndlessProvider>>;

beforeAll(async () => {
  provider = await startEndlessProvider(() => kind);
});

afterAll(async () => {
  await provider?.close();
});

function endlessConfig(onInterruptedStream: 'ask' | 'stop') {
  return testConfig({
    retry: { initialInterval: '100ms', maximumInterval: '1s' },
    model: {
      default: 'endless',
      maxResponseBytes: MAX_RESPONSE_BYTES,
      onInterruptedStream,
      models: { endless: { provider: 'openai-compatible', model: 'gpt-endless', baseURL: provider.baseURL } },
    },
  });
}

describe('a provider stream that never ends', () => {
  it('after chunks went out: cut at maxResponseBytes, the worker hangs up, and the turn waits for a person (stream_interrupted)', async () => {
    kind = 'text';
    const before = provider.served.length;
    const { result } = await runTurn({
      config: endlessConfig('ask'),
      input: { prompt: 'write for ever' },
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingResume !== undefined);
        // What went out is kept (its last characters, as the live view shows them).
        expect(state.pendingResume!.chunks).toBeGreaterThan(0);
        expect(state.pendingResume!.partialText).toMatch(/(more and more text )+$/);
        // Every chunk that went out came in whole, on more bytes than its text: no more came in than the cap.
        expect(state.pendingResume!.chunks).toBeLessThanOrEqual(MAX_RESPONSE_BYTES / 'more and more text '.length);
        await handle.signal(resumeSignal, { step: state.pendingResume!.step, decision: 'stop', by: 'tester' });
      },
    });
    expect(result.status).toBe('model_failed');
    expect(result.error).toMatchObject({ type: 'stream_interrupted' });
    expect(result.error?.message).toContain(`the model provider's answer passed ${MAX_RESPONSE_BYTES} bytes (maxResponseBytes)`);
    // One request, never replayed by itself, and the worker closed it while the provider still wrote.
    const served = provider.served.slice(before);
    expect(served).toHaveLength(1);
    expect(served[0].closedByClient).toBe(true);
    expect(served[0].bytes).toBeGreaterThan(MAX_RESPONSE_BYTES);
  });

  it('before the first chunk (only padding): a transient fault, retried within the step bound, each request cut and closed', async () => {
    kind = 'padding';
    const before = provider.served.length;
    const { result } = await runTurn({ config: endlessConfig('stop'), input: { prompt: 'say something' } });
    expect(result.status).toBe('model_failed');
    expect(result.error).toMatchObject({ type: 'model_unavailable' });
    expect(result.error?.message).toContain(`passed ${MAX_RESPONSE_BYTES} bytes (maxResponseBytes)`);
    const served = provider.served.slice(before);
    // The model step's retry policy: four attempts, each cut and hung up on.
    expect(served).toHaveLength(4);
    expect(served.every((connection) => connection.closedByClient)).toBe(true);
  });
});

describe('the config of the cap', () => {
  const parse = (model: Record<string, unknown>) => parseConfig({ model }, { source: 'x.yaml', baseDir: '/', env: {} });

  it('defaults to 32 MiB, takes a bound per model entry, and names a bound that is too small', () => {
    expect(parse({}).model.maxResponseBytes).toBe(DEFAULT_MODEL_MAX_RESPONSE_BYTES);
    expect(DEFAULT_MODEL_MAX_RESPONSE_BYTES).toBe(32 * 1024 * 1024);
    const entry = parse({ default: 'm', models: { m: { provider: 'openai', model: 'x', maxResponseBytes: 4096 } } }).model.models.m;
    expect(entry).toMatchObject({ maxResponseBytes: 4096 });
    expect(() => parse({ maxResponseBytes: 10 })).toThrow('x.yaml: model.maxResponseBytes: expected at least 1024 bytes');
    expect(() => parse({ default: 'm', models: { m: { provider: '@ai-sdk/google', model: 'g', maxResponseBytes: 'big' } } })).toThrow(
      /model\.models\.m\.maxResponseBytes/,
    );
  });
});
