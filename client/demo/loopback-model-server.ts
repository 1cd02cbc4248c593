import http from 'node:http';
import { listenOnLoopback } from './loopback-http';
import { playScriptedModel } from '../../activities/models/scripted-plan';
import type { ToolResult, TurnMessage } from '../../common/types';

/** A chat message as an OpenAI-compatible client sends it. */
interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: string | null | Array<{ type: string; text?: string }>;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  return (content ?? []).map((part) => part.text ?? '').join('');
}

function toTurn(messages: ChatMessage[]): { taskId: string; turn: TurnMessage[] } {
  let taskId = 'loopback';
  const names = new Map<string, string>();
  const turn: TurnMessage[] = [];
  for (const message of messages) {
    if (message.role === 'system') taskId = /^Task id: (.+)$/m.exec(textOf(message.content))?.[1] ?? taskId;
    else if (message.role === 'user') turn.push({ role: 'user', content: textOf(message.content) });
    else if (message.role === 'assistant') {
      const toolCalls = (message.tool_calls ?? []).map((call) => {
        names.set(call.id, call.function.name);
        return { callId: call.id, tool: call.function.name, args: JSON.parse(call.function.arguments || '{}') as unknown };
      });
      turn.push({ role: 'assistant', text: textOf(message.content) || undefined, toolCalls });
    } else {
      const callId = message.tool_call_id ?? '';
      turn.push({ role: 'tool', callId, tool: names.get(callId) ?? '', result: JSON.parse(textOf(message.content)) as ToolResult });
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
}

/**
 * An OpenAI-compatible chat-completions server on 127.0.0.1 whose "model" is the embedded scripted
 * plan: it lets a turn run through the real `openai-compatible` provider, its HTTP requests and its
 * streamed answers, without a model or a network. Text streams word by word, `delayMs` apart; a
 * request with `stream` not true gets the whole reply as one chat completion.
 */
export async function startLoopbackModelServer({ delayMs = 20 }: { delayMs?: number } = {}): Promise<LoopbackModelServer> {
  let chunksSent = 0;
  const server = http.createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', async () => {
      if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
        response
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: `no route ${request.method} ${request.url}` } }));
        return;
      }
      let body: { model?: string; stream?: boolean; messages?: ChatMessage[]; tools?: Array<{ function: { name: string } }> };
      try {
        body = JSON.parse(raw);
      } catch {
        response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'the body is not JSON' } }));
        return;
      }
      const { taskId, turn } = toTurn(body.messages ?? []);
      const prompt = turn.filter((message) => message.role === 'user').at(-1);
      const reply = playScriptedModel({
        taskId,
        prompt: prompt?.role === 'user' ? prompt.content : '',
        messages: turn,
        availableTools: (body.tools ?? []).map((tool) => tool.function.name),
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
        await new Promise((resolve) => setTimeout(resolve, delayMs));
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
    });
  });
  const listener = await listenOnLoopback(server);
  return {
    baseURL: `http://127.0.0.1:${listener.port}/v1`,
    get chunksSent() {
      return chunksSent;
    },
    close: listener.close,
  };
}
