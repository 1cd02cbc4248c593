// The peer variant's workflow: the benchmark's agent turn as @temporalio/ai-sdk runs it. The model
// call goes through the Temporal-backed provider (one activity per model step), and each tool's
// `execute` calls a plain activity; nothing checks, records or approves a call. With `stream`, the
// turn runs `streamText` on the integration's streaming path: each model step streams in its
// activity, which publishes the parts to the workflow's stream (the `tokens` topic) as it goes.
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ToolSet } from 'ai';
import { TemporalProvider, temporalProvider } from '@temporalio/ai-sdk/workflow';
import { WorkflowStream } from '@temporalio/workflow-streams/workflow';
import { condition, defineQuery, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { GetDocumentArgs, PlanToolActivities, SaveDraftArgs, SearchArgs } from './plan-tools';

const { planSearch, planGetDocument, planSaveDraft } = proxyActivities<PlanToolActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** What one peer turn is given: the request, the task it belongs to, and whether its write waits for a go-ahead. */
export interface PeerTurnInput {
  taskId: string;
  prompt: string;
  /** The model name the worker's provider is asked for. */
  model: string;
  /** Waits for `peerGoAhead` before the write (the nearest thing to an approval without a boundary). */
  waitBeforeWrite?: boolean;
  /** Streams each model step through the integration's streaming activity (streamText) instead of generateText. */
  stream?: boolean;
}

/** The provider of the streaming path: its model steps publish their parts to the workflow stream's `tokens` topic. */
const streamingProvider = new TemporalProvider({ languageModel: { streamingTopic: 'tokens' } });

/** What a peer turn returns. */
export interface PeerTurnResult {
  answer: string;
  steps: number;
  toolCalls: number;
}

/** Whether the turn waits for its go-ahead before the write. */
export const peerWaitingQuery = defineQuery<boolean>('peerWaiting');
/** The go-ahead for the write of a turn started with `waitBeforeWrite`. */
export const peerGoAheadSignal = defineSignal('peerGoAhead');

/** The agent turn: search, read, write a draft, answer, as the model asks. */
export async function peerAgentTurn(input: PeerTurnInput): Promise<PeerTurnResult> {
  let waiting = false;
  let goAhead = !input.waitBeforeWrite;
  setHandler(peerWaitingQuery, () => waiting);
  setHandler(peerGoAheadSignal, () => {
    goAhead = true;
  });
  let toolCalls = 0;
  const tools: ToolSet = {
    search_local_sources: tool({
      description: 'Search the local sources for documents matching a query.',
      inputSchema: jsonSchema<SearchArgs>({
        type: 'object',
        properties: { query: { type: 'string' }, mode: { type: 'string', enum: ['words', 'regex'] }, limit: { type: 'integer' } },
        required: ['query'],
        additionalProperties: false,
      }),
      execute: async (args) => {
        toolCalls++;
        return planSearch(args);
      },
    }),
    get_document: tool({
      description: 'Read one document of the local sources by its id.',
      inputSchema: jsonSchema<GetDocumentArgs>({
        type: 'object',
        properties: { id: { type: 'string' } },
        required: ['id'],
        additionalProperties: false,
      }),
      execute: async (args) => {
        toolCalls++;
        return planGetDocument(args);
      },
    }),
    save_draft: tool({
      description: 'Save a text draft in the workspace drafts folder.',
      inputSchema: jsonSchema<Omit<SaveDraftArgs, 'taskId'>>({
        type: 'object',
        properties: { path: { type: 'string' }, content: { type: 'string' } },
        required: ['path', 'content'],
        additionalProperties: false,
      }),
      execute: async (args) => {
        toolCalls++;
        waiting = !goAhead;
        await condition(() => goAhead);
        waiting = false;
        return planSaveDraft({ taskId: input.taskId, ...args });
      },
    }),
  };
  const request = { instructions: `Task id: ${input.taskId}`, prompt: input.prompt, stopWhen: stepCountIs(8), tools };
  if (!input.stream) {
    const result = await generateText({ model: temporalProvider.languageModel(input.model), ...request });
    return { answer: result.text, steps: result.steps.length, toolCalls };
  }
  // The stream the streaming activity publishes to (its signal, update and query handlers).
  new WorkflowStream();
  const result = streamText({ model: streamingProvider.languageModel(input.model), ...request });
  await result.consumeStream();
  return { answer: await result.text, steps: (await result.steps).length, toolCalls };
}
