import type { JSONValue, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { describeReference, isArgumentsReference } from '../../common/call-arguments';
import type { TurnMessage } from '../../common/contract/conversation';
import type { ToolCallRequest, ToolResult } from '../../common/contract/tools';

/** Tollgate's rules on tool results, which every system message ends with (an agent's instructions come before them). */
export const TOOL_RESULT_RULES = [
  'A tool result has a status; on an error it has a stable code and a short message. Correct invalid_arguments and try again; do not repeat a call that was denied.',
  'Large arguments of a call that already ran are shown as omitted, with their size and digest; do not repeat the call for that reason.',
].join('\n');

/** The system message of the default agent's model steps: how to work with the tools' results. */
export const SYSTEM_MESSAGE = [
  'You are an agent working for a person. Use the tools to find facts before you answer; answer from what the tools returned.',
  TOOL_RESULT_RULES,
].join('\n');

function toolOutput(result: ToolResult): { type: 'json'; value: JSONValue } {
  return { type: 'json', value: JSON.parse(JSON.stringify(result)) as JSONValue };
}

/** A call's input as the model is sent it: a reference to arguments the turn no longer keeps becomes a note saying so. */
function toolInput(call: ToolCallRequest): unknown {
  return isArgumentsReference(call.args) ? { omitted: describeReference(call.callId, call.args) } : call.args;
}

/** A turn's messages in the AI SDK's provider prompt format, after the system message (the default agent's when none is given). */
export function toModelPrompt(messages: TurnMessage[], system: string = SYSTEM_MESSAGE): LanguageModelV4Prompt {
  const prompt: LanguageModelV4Prompt = [{ role: 'system', content: system }];
  for (const message of messages) {
    if (message.role === 'user') prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] });
    else if (message.role === 'assistant') {
      prompt.push({
        role: 'assistant',
        content: [
          ...(message.text ? [{ type: 'text' as const, text: message.text }] : []),
          ...message.toolCalls.map((call) => ({
            type: 'tool-call' as const,
            toolCallId: call.callId,
            toolName: call.tool,
            input: toolInput(call),
          })),
        ],
      });
    } else {
      const part = { type: 'tool-result' as const, toolCallId: message.callId, toolName: message.tool, output: toolOutput(message.result) };
      const last = prompt.at(-1);
      if (last?.role === 'tool') last.content.push(part);
      else prompt.push({ role: 'tool', content: [part] });
    }
  }
  return prompt;
}

/** The turn's messages back from a provider prompt (what the scripted model reads). */
export function fromModelPrompt(prompt: LanguageModelV4Prompt): TurnMessage[] {
  const messages: TurnMessage[] = [];
  for (const message of prompt) {
    if (message.role === 'system') continue;
    if (message.role === 'user') {
      messages.push({ role: 'user', content: message.content.map((part) => (part.type === 'text' ? part.text : '')).join('') });
    } else if (message.role === 'assistant') {
      const text = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      const toolCalls = message.content.flatMap((part) =>
        part.type === 'tool-call' ? [{ callId: part.toolCallId, tool: part.toolName, args: part.input }] : [],
      );
      messages.push({ role: 'assistant', text: text || undefined, toolCalls });
    } else {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue;
        const result =
          part.output.type === 'json'
            ? (part.output.value as unknown as ToolResult)
            : { status: 'success' as const, data: 'value' in part.output ? part.output.value : null };
        messages.push({ role: 'tool', callId: part.toolCallId, tool: part.toolName, result });
      }
    }
  }
  return messages;
}
