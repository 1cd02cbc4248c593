import http from 'node:http';
import { listenOnLoopback } from '../client/demo/loopback-http';
import { guardClientErrors, parseJsonBody, readRequestBody, requestGuard } from '../hardened/request-guard';

/** The largest request body the fake provider reads; a bigger one is answered 413 and not recorded. */
export const MAX_FAKE_REQUEST_BYTES = 32 * 1024 * 1024;

/** One scripted answer of the fake provider to one request. */
export type FakeReply =
  /** An HTTP error with a JSON body and optional headers (Retry-After, say). */
  | { kind: 'error'; status: number; headers?: Record<string, string>; body: unknown }
  /** A streamed answer: server-sent events, optionally cut off (socket destroyed) after `resetAfter` events, or left hanging after `stallAfter`. */
  | { kind: 'stream'; events: string[]; resetAfter?: number; stallAfter?: number }
  /** A whole reply as one JSON body (a request that does not stream), optionally cut off (socket destroyed) after `resetAfterBytes`. */
  | { kind: 'json'; body: unknown; resetAfterBytes?: number };

/** The request header that names the queue a request is answered from (the testing kit sends a turn's workflow id). */
export const FAKE_PROVIDER_QUEUE_HEADER = 'x-tollgate-fake-queue';

/** A request the fake provider received. */
export interface FakeRequest {
  at: number;
  path: string;
  body: unknown;
  /** The queue it was answered from ({@link FAKE_PROVIDER_QUEUE_HEADER}); left out for the default queue. */
  queue?: string;
  headers: http.IncomingHttpHeaders;
}

/** A loopback HTTP server that answers model requests from a queue of replies, in the providers' real wire formats. */
export interface FakeProvider {
  baseURL: string;
  requests: FakeRequest[];
  enqueue(...replies: FakeReply[]): void;
  /** Queues replies for the requests that name `queue` in {@link FAKE_PROVIDER_QUEUE_HEADER}. */
  enqueueFor(queue: string, ...replies: FakeReply[]): void;
  close(): Promise<void>;
}

/** Starts the fake provider on 127.0.0.1 and a free port. */
export async function startFakeProvider(): Promise<FakeProvider> {
  const queue: FakeReply[] = [];
  const named = new Map<string, FakeReply[]>();
  const requests: FakeRequest[] = [];
  const handle = async (request: http.IncomingMessage, response: http.ServerResponse): Promise<void> => {
    const raw = await readRequestBody(request, MAX_FAKE_REQUEST_BYTES);
    const header = request.headers[FAKE_PROVIDER_QUEUE_HEADER];
    const name = typeof header === 'string' ? header : undefined;
    // A body that is not JSON is answered 400 (in the providers' error shape) and takes no queued reply.
    const body = raw.length > 0 ? parseJsonBody(raw) : undefined;
    requests.push({ at: Date.now(), path: request.url ?? '', body, headers: request.headers, ...(name ? { queue: name } : {}) });
    const reply = (name === undefined ? queue : named.get(name))?.shift();
    if (!reply) {
      response.writeHead(500, { 'content-type': 'application/json' });
      const which = name === undefined ? '' : ` for ${name}`;
      response.end(JSON.stringify({ error: { message: `the fake provider has no reply queued${which}` } }));
      return;
    }
    if (reply.kind === 'error') {
      response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      response.end(JSON.stringify(reply.body));
      return;
    }
    if (reply.kind === 'json') {
      const text = JSON.stringify(reply.body);
      if (reply.resetAfterBytes === undefined) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(text);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
      response.write(text.slice(0, reply.resetAfterBytes));
      setTimeout(() => request.socket.destroy(), 20);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const cut = reply.resetAfter ?? reply.stallAfter;
    reply.events.forEach((event, index) => {
      if (cut !== undefined && index >= cut) return;
      response.write(event);
    });
    if (reply.resetAfter !== undefined) setTimeout(() => request.socket.destroy(), 20);
    else if (reply.stallAfter === undefined) response.end();
  };
  const server = http.createServer(requestGuard({ name: 'fake provider', handle, format: 'json' }));
  guardClientErrors(server);
  const listener = await listenOnLoopback(server);
  return {
    baseURL: `http://127.0.0.1:${listener.port}/v1`,
    requests,
    enqueue: (...replies) => queue.push(...replies),
    enqueueFor: (name, ...replies) => {
      if (!named.has(name)) named.set(name, []);
      named.get(name)!.push(...replies);
    },
    close: listener.close,
  };
}

function sse(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

/** One chunk of a chat completions stream (OpenAI's, and the APIs shaped like it), by the completion's id and model. */
function completionChunk(id: string, model: string) {
  return (delta: unknown, finish: string | null = null, extra = {}) =>
    sse({
      id,
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
}

/** OpenAI Chat Completions streaming: text deltas, or one tool call whose arguments arrive in pieces. */
export const openaiStream = {
  text(pieces: string[], usage = { prompt_tokens: 11, completion_tokens: 7 }): string[] {
    const chunk = completionChunk('chatcmpl-1', 'gpt-test');
    return [
      chunk({ role: 'assistant', content: '' }),
      ...pieces.map((piece) => chunk({ content: piece })),
      chunk({}, 'stop'),
      sse({
        id: 'chatcmpl-1',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model: 'gpt-test',
        choices: [],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }),
      sse('[DONE]'),
    ];
  },
  toolCall(name: string, argumentPieces: string[], usage = { prompt_tokens: 13, completion_tokens: 9 }): string[] {
    const chunk = (delta: unknown, finish: string | null = null) =>
      sse({
        id: 'chatcmpl-2',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model: 'gpt-test',
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
    return [
      chunk({
        role: 'assistant',
        content: null,
        tool_calls: [{ index: 0, id: 'call_abc', type: 'function', function: { name, arguments: '' } }],
      }),
      ...argumentPieces.map((piece) => chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
      chunk({}, 'tool_calls'),
      sse({
        id: 'chatcmpl-2',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model: 'gpt-test',
        choices: [],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }),
      sse('[DONE]'),
    ];
  },
};

/** OpenAI Chat Completions without streaming: one whole completion with text and tool calls (for models configured `stream: false`). */
export function openaiReply({
  text,
  toolCalls = [],
  usage = { prompt_tokens: 12, completion_tokens: 6 },
}: {
  text?: string;
  toolCalls?: Array<{ name: string; args: unknown }>;
  usage?: { prompt_tokens: number; completion_tokens: number };
}): { kind: 'json'; body: unknown } {
  const calls = toolCalls.map(({ name, args }, index) => ({
    id: `call_${index}`,
    type: 'function',
    function: { name, arguments: JSON.stringify(args) },
  }));
  return {
    kind: 'json',
    body: {
      id: 'chatcmpl-3',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'gpt-test',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: text ?? null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
          finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    },
  };
}

/** The `message_start` event of an Anthropic Messages stream. */
function anthropicStart(id: string, inputTokens: number): string {
  const message = { id, type: 'message', role: 'assistant', content: [], model: 'claude-test', stop_reason: null, stop_sequence: null };
  return sse({ type: 'message_start', message: { ...message, usage: { input_tokens: inputTokens, output_tokens: 1 } } }, 'message_start');
}

/** Anthropic Messages streaming: text deltas, or one tool_use block whose input arrives as partial JSON. */
export const anthropicStream = {
  text(pieces: string[], usage = { input_tokens: 21, output_tokens: 8 }): string[] {
    return [
      anthropicStart('msg_1', usage.input_tokens),
      sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
      ...pieces.map((piece) =>
        sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }, 'content_block_delta'),
      ),
      sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
      sse(
        { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output_tokens } },
        'message_delta',
      ),
      sse({ type: 'message_stop' }, 'message_stop'),
    ];
  },
  toolUse(name: string, jsonPieces: string[], usage = { input_tokens: 23, output_tokens: 12 }): string[] {
    return [
      anthropicStart('msg_2', usage.input_tokens),
      sse(
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_01', name, input: {} } },
        'content_block_start',
      ),
      ...jsonPieces.map((piece) =>
        sse({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: piece } }, 'content_block_delta'),
      ),
      sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
      sse(
        { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: usage.output_tokens } },
        'message_delta',
      ),
      sse({ type: 'message_stop' }, 'message_stop'),
    ];
  },
};

/** Gemini's `:streamGenerateContent?alt=sse`: text parts, or one functionCall part (Gemini sends a call whole); usage on the last chunk. */
export const geminiStream = {
  text(pieces: string[], usage = { promptTokenCount: 17, candidatesTokenCount: 5 }): string[] {
    return pieces.map((piece, index) =>
      sse({
        candidates: [
          {
            content: { role: 'model', parts: [{ text: piece }] },
            ...(index === pieces.length - 1 ? { finishReason: 'STOP' } : {}),
            index: 0,
          },
        ],
        ...(index === pieces.length - 1
          ? { usageMetadata: { ...usage, totalTokenCount: usage.promptTokenCount + usage.candidatesTokenCount } }
          : {}),
        modelVersion: 'gemini-test',
        responseId: 'gemini-1',
      }),
    );
  },
  functionCall(name: string, args: unknown, usage = { promptTokenCount: 19, candidatesTokenCount: 6 }): string[] {
    return [
      sse({
        candidates: [{ content: { role: 'model', parts: [{ functionCall: { name, args } }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { ...usage, totalTokenCount: usage.promptTokenCount + usage.candidatesTokenCount },
        modelVersion: 'gemini-test',
        responseId: 'gemini-2',
      }),
    ];
  },
};

/** Mistral's chat completions streaming (OpenAI-like): text deltas, or one tool call sent whole; usage on the last chunk. */
export const mistralStream = {
  text(pieces: string[], usage = { prompt_tokens: 15, completion_tokens: 4 }): string[] {
    const chunk = completionChunk('mistral-1', 'mistral-test');
    return [
      chunk({ role: 'assistant', content: '' }),
      ...pieces.map((piece) => chunk({ content: piece })),
      chunk({ content: '' }, 'stop', { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }),
      sse('[DONE]'),
    ];
  },
  toolCall(name: string, args: string, usage = { prompt_tokens: 16, completion_tokens: 8 }): string[] {
    const chunk = completionChunk('mistral-2', 'mistral-test');
    return [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: '', tool_calls: [{ id: 'Ab3dE6gH9', function: { name, arguments: args }, index: 0 }] }, 'tool_calls', {
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }),
      sse('[DONE]'),
    ];
  },
};
