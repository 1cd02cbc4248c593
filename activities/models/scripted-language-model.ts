import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart, LanguageModelV4Usage } from '@ai-sdk/provider';
import type { ScriptStep } from '../../common/contract/turn';
import { playScriptedModel } from '../../tools/built-in/scripted-plan';
import { fromModelPrompt } from './model-prompt';

function wordCount(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function usage(input: number, output: number): LanguageModelV4Usage {
  return {
    inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: output, reasoning: undefined },
  };
}

/**
 * The embedded scripted model behind the AI SDK's provider interface: it reads the prompt like any
 * model, plays its script (or the built-in plan) and streams the reply as text deltas and tool
 * calls. It counts words as tokens.
 */
export class ScriptedLanguageModel implements LanguageModelV4 {
  readonly specificationVersion = 'v4';
  readonly provider = 'tollgate';
  readonly modelId = 'scripted';
  readonly supportedUrls = {};

  constructor(private readonly script?: ScriptStep[]) {}

  private reply(options: LanguageModelV4CallOptions) {
    const messages = fromModelPrompt(options.prompt);
    const taskId = String((options.providerOptions?.tollgate as { taskId?: unknown } | undefined)?.taskId ?? '');
    const prompt = messages.filter((message) => message.role === 'user').at(-1);
    const availableTools = (options.tools ?? []).map((tool) => tool.name);
    const reply = playScriptedModel({
      taskId,
      prompt: prompt?.role === 'user' ? prompt.content : '',
      messages,
      script: this.script,
      availableTools,
    });
    const inputWords = wordCount(JSON.stringify(options.prompt));
    const outputWords = wordCount(reply.text ?? '') + wordCount(JSON.stringify(reply.toolCalls));
    return { reply, usage: usage(inputWords, outputWords) };
  }

  async doGenerate(options: LanguageModelV4CallOptions): Promise<Awaited<ReturnType<LanguageModelV4['doGenerate']>>> {
    const { reply, usage: counted } = this.reply(options);
    return {
      content: [
        ...(reply.text ? [{ type: 'text' as const, text: reply.text }] : []),
        ...reply.toolCalls.map((call, index) => ({
          type: 'tool-call' as const,
          toolCallId: `scripted-${index}`,
          toolName: call.tool,
          input: JSON.stringify(call.args ?? {}),
        })),
      ],
      finishReason: { unified: reply.toolCalls.length > 0 ? 'tool-calls' : 'stop', raw: undefined },
      usage: counted,
      warnings: [],
    };
  }

  async doStream(options: LanguageModelV4CallOptions): Promise<Awaited<ReturnType<LanguageModelV4['doStream']>>> {
    const { reply, usage: counted } = this.reply(options);
    const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
    if (reply.text) {
      parts.push({ type: 'text-start', id: 'text-0' });
      for (const piece of reply.text.match(/\S+\s*|\s+/g) ?? []) parts.push({ type: 'text-delta', id: 'text-0', delta: piece });
      parts.push({ type: 'text-end', id: 'text-0' });
    }
    reply.toolCalls.forEach((call, index) =>
      parts.push({ type: 'tool-call', toolCallId: `scripted-${index}`, toolName: call.tool, input: JSON.stringify(call.args ?? {}) }),
    );
    parts.push({
      type: 'finish',
      usage: counted,
      finishReason: { unified: reply.toolCalls.length > 0 ? 'tool-calls' : 'stop', raw: undefined },
    });
    return {
      stream: new ReadableStream({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      }),
    };
  }
}
