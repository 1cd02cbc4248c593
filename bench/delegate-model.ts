// The delegate section's model: one scripted plan (look one thing up, then answer) that the
// subagent's Tollgate turn runs as its model, and that the bare child workflow's model-step activity
// runs through the AI SDK's streamText, so both children ask the same model for the same steps.
import { streamText, tool, type ModelMessage } from 'ai';
import { z } from 'zod';
import { ScriptedLanguageModel } from '../activities/models/scripted-language-model';
import type { ScriptStep } from '../common/contract/turn';

/** The subagent's plan: one lookup, then the answer. */
export const READER_SCRIPT: ScriptStep[] = [
  { toolCalls: [{ tool: 'lookup', args: { query: 'the order' } }] },
  { text: 'The order was found.' },
];

/** The name the subagent's model is served under (a model built in code). */
export const READER_MODEL = 'bench-reader';

/** The subagent's model: the scripted plan behind the AI SDK's provider interface. */
export function readerModel(): ScriptedLanguageModel {
  return new ScriptedLanguageModel(READER_SCRIPT);
}

/** What the bare child's model step returns. */
export interface BareReaderReply {
  text: string;
  toolCalls: Array<{ toolCallId: string; toolName: string; input: unknown }>;
}

/** The bare child's model-step activity: the same scripted model through `streamText`, offered the lookup tool without `execute`. */
export function bareReaderActivities() {
  const model = readerModel();
  const tools = { lookup: tool({ description: 'Looks something up.', inputSchema: z.strictObject({ query: z.string() }) }) };
  return {
    bareReaderStep: async (messages: ModelMessage[]): Promise<BareReaderReply> => {
      // Streamed and read to its end, as a Tollgate model step reads its model's reply by default.
      const streamed = streamText({ model, messages, tools, maxRetries: 0 });
      await streamed.consumeStream();
      return {
        text: await streamed.text,
        toolCalls: (await streamed.toolCalls).map((call) => ({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input })),
      };
    },
  };
}

export type BareReaderActivities = ReturnType<typeof bareReaderActivities>;
