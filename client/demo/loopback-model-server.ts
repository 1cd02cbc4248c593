import http from 'node:http';
import { guardClientErrors, parseJsonBody, readRequestBody, RequestRefusal, requestGuard } from '../../hardened/request-guard';
import { listenOnLoopback } from './loopback-http';
import { playScriptedModel } from '../../tools/built-in/scripted-plan';
import type { TurnMessage } from '../../common/contract/conversation';
import type { ToolResult } from '../../common/contract/tools';

/** A chat message as an OpenAI-compatible client sends it. */
interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: string | null | Array<{ type: string; text?: string }>;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** The largest request body the server reads; a bigger one is answered 413. */
export const MAX_LOOPBACK_REQUEST_BYTES = 16 * 1024 * 1024;

function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
}

/** JSON text a message carries (tool arguments, a tool result), or a 400 naming where it is not JSON. */
function jsonAt(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RequestRefusal(400, `${where}: not JSON: ${(error as Error).message}`);
  }
}

function toTurn(messages: ChatMessage[]): { taskId: string; turn: TurnMessage[] } {
  let taskId = 'loopback';
  const names = new Map<string, string>();
  const turn: TurnMessage[] = [];
  for (const [position, message] of messages.entries()) {
    if (typeof message !== 'object' || message === null) throw new RequestRefusal(400, `messages[${position}]: expected an object`);
    if (message.role === 'system') taskId = /^Task id: (.+)$/m.exec(textOf(message.content))?.[1] ?? taskId;
    else if (message.role === 'user') turn.push({ role: 'user', content: textOf(message.content) });
    else if (message.role === 'assistant') {
      if (message.tool_calls !== undefined && !Array.isArray(message.tool_calls)) {
        throw new RequestRefusal(400, `messages[${position}].tool_calls: expected an array`);
      }
      const toolCalls = (message.tool_calls ?? []).map((call, index) => {
        const where = `messages[${position}].tool_calls[${index}]`;
        if (typeof call?.id !== 'string' || typeof call.function?.name !== 'string') {
          throw new RequestRefusal(400, `${where}: expected { id, function: { name, arguments } }`);
        }
        names.set(call.id, call.function.name);
        const args = typeof call.function.arguments === 'string' && call.function.arguments !== '' ? call.function.arguments : '{}';
        return { callId: call.id, tool: call.function.name, args: jsonAt(args, `${where}.function.arguments`) };
      });
      turn.push({ role: 'assistant', text: textOf(message.content) || undefined, toolCalls });
    } else {
      const callId = message.tool_call_id ?? '';
      const result = jsonAt(textOf(message.content), `messages[${position}].content`) as ToolResult;
      turn.push({ role: 'tool', callId, tool: names.get(callId) ?? '', result });
    }
  }
  return { taskId, turn };
}

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** A running loopback model server. */
export interface LoopbackModelServer {
  /** The base URL an `openai-compatible` model entry points at. */
  baseURL: string;
  close(): Promise<void>;
  /** Text chunks streamed so far, over every request (one per word). */
  readonly chunksSent: number;
  /** Milliseconds spent waiting between chunks so far, over every request: the pacing's own share of a streamed reply's time. */
  readonly pacedMs: number;
}

/**
 * An OpenAI-compatible chat-completions server on 127.0.0.1 whose "model" is the embedded scripted
 * plan: it lets a turn run through the real `openai-compatible` provider, its HTTP requests and its
 * streamed answers, without a model or a network. Text streams word by word, `delayMs` apart (with
 * 0, each word still its own write, one event-loop turn apart, no timer); a request with `stream`
 * not true gets the whole reply as one chat completion.
 */
export async function startLoopbackModelServer({ delayMs = 20 }: { delayMs?: number } = {}): Promise<LoopbackModelServer> {
  let chunksSent = 0;
  let pacedMs = 0;
  const handle = async (request: http.IncomingMessage, response: http.ServerResponse): Promise<void> => {
    if (!(request.url ?? '').split('?')[0].endsWith('/chat/completions'))
      throw new RequestRefusal(404, 'no route; POST /v1/chat/completions');
    if (request.method !== 'POST') throw new RequestRefusal(405, '/chat/completions takes POST', { allow: 'POST' });
    const bytes = await readRequestBody(request, MAX_LOOPBACK_REQUEST_BYTES);
    const raw = bytes.toString('utf8');
    const body = parseJsonBody(bytes) as {
      model?: string;
      stream?: boolean;
      messages?: ChatMessage[];
      tools?: Array<{ function: { name: string } }>;
    } | null;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new RequestRefusal(400, 'the body: expected a JSON object');
    if (body.messages !== undefined && !Array.isArray(body.messages)) throw new RequestRefusal(400, 'messages: expected an array');
    if (body.tools !== undefined && !Array.isArray(body.tools)) throw new RequestRefusal(400, 'tools: expected an array');
    if (body.model !== undefined && typeof body.model !== 'string') throw new RequestRefusal(400, 'model: expected a string');
    const { taskId, turn } = toTurn(body.messages ?? []);
    const prompt = turn.filter((message) => message.role === 'user').at(-1);
    const reply = playScriptedModel({
      taskId,
      prompt: prompt?.role === 'user' ? prompt.content : '',
      messages: turn,
      availableTools: (body.tools ?? []).flatMap((tool) => (typeof tool?.function?.name === 'string' ? [tool.function.name] : [])),
    });
    const promptTokens = words(raw);
    const completionTokens = words(reply.text ?? '') + words(JSON.stringify(reply.toolCalls));
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    const toolCalls = reply.toolCalls.map((call, index) => ({
      id: `call_${Date.now()}_${index}`,
      type: 'function',
      function: { name: call.tool, arguments: JSON.stringify(call.args ?? {}) },
    }));
    const finishReason = reply.toolCalls.length > 0 ? 'tool_calls' : 'stop';
    if (body.stream !== true) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `chatcmpl-${Date.now()}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model ?? 'scripted',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: reply.text ?? null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
              finish_reason: finishReason,
            },
          ],
          usage,
        }),
      );
      return;
    }
    const base = {
      id: `chatcmpl-${Date.now()}`,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? 'scripted',
    };
    const send = (data: unknown) => response.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    for (const piece of reply.text?.match(/\S+\s*|\s+/g) ?? []) {
      const pacing = performance.now();
      await new Promise((resolve) => (delayMs > 0 ? setTimeout(resolve, delayMs) : setImmediate(resolve)));
      pacedMs += performance.now() - pacing;
      send({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
      chunksSent++;
    }
    toolCalls.forEach((call, index) =>
      send({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, ...call }] }, finish_reason: null }] }),
    );
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finishReason }] });
    send({ ...base, choices: [], usage });
    send('[DONE]');
    response.end();
  };
  const server = http.createServer(requestGuard({ name: 'loopback model server', handle, format: 'json' }));
  guardClientErrors(server);
  const listener = await listenOnLoopback(server);
  return {
    baseURL: `http://127.0.0.1:${listener.port}/v1`,
    get chunksSent() {
      return chunksSent;
    },
    get pacedMs() {
      return pacedMs;
    },
    close: listener.close,
  };
}
