// The bare agent loop's model step for the peer benchmark: one AI SDK 7 call through the
// openai-compatible provider to the loopback model server, offering the plan's three tools without
// `execute`, so that the step returns the calls the model asks for and the workflow runs them.
// With `stream`, the step asks for a streamed reply (streamText) and reads it to its end in the
// activity: a loop that streams, with nothing watching the tokens.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText, tool, type ModelMessage } from 'ai';
import { planToolDefinitions } from './plan-tools';

/** A tool call as the bare loop's model step returns it. */
export interface PlanToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/** What one bare model step returns. */
export interface PlanModelReply {
  text: string;
  toolCalls: PlanToolCall[];
}

/** The bare loop's model-step activity against the model server at `baseURL`. */
export function planModelActivities({ baseURL, corpus, workspace }: { baseURL: string; corpus: string; workspace: string }) {
  const model = createOpenAICompatible({ name: 'loopback', baseURL })('scripted');
  const definitions = Object.values(planToolDefinitions({ corpus, workspace }));
  const tools = Object.fromEntries(
    definitions.map((definition) => [definition.name, tool({ description: definition.description, inputSchema: definition.input })]),
  );
  return {
    planModelStep: async (messages: ModelMessage[], stream = false): Promise<PlanModelReply> => {
      const request = { model, messages, tools, maxRetries: 0, allowSystemInMessages: true };
      if (stream) {
        const streamed = streamText(request);
        await streamed.consumeStream();
        const toolCalls = await streamed.toolCalls;
        return {
          text: await streamed.text,
          toolCalls: toolCalls.map((call) => ({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input })),
        };
      }
      const result = await generateText(request);
      return {
        text: result.text,
        toolCalls: result.toolCalls.map((call) => ({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input })),
      };
    },
  };
}

export type PlanModelActivities = ReturnType<typeof planModelActivities>;
