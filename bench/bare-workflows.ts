// The floor the benchmarks compare Tollgate with: the same handlers as bare Temporal activities.
import { condition, defineQuery, defineSignal, executeChild, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { JSONValue, ModelMessage } from 'ai';
import type { BareActivities } from './bench-tools';
import type { BareReaderActivities } from './delegate-model';
import type { PlanModelActivities } from './plan-model';
import type { GetDocumentArgs, PlanToolActivities, SaveDraftArgs, SearchArgs } from './plan-tools';

const { bareLookup, barePutNote, bareSendNote, bareModelStep } = proxyActivities<BareActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});
const { planModelStep, planSearch, planGetDocument, planSaveDraft } = proxyActivities<PlanModelActivities & PlanToolActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** Which call of `bareApprovedSends` waits for its go-ahead (-1: none). */
export const bareWaitingQuery = defineQuery<number>('bareWaiting');
/** The go-ahead for one call of `bareApprovedSends`. */
export const bareApproveSignal = defineSignal<[number]>('bareApprove');

/** `calls` bare activity calls one after another; each call's duration in workflow time (ms). */
export async function bareCalls(kind: 'read' | 'write', calls: number, prefix: string): Promise<number[]> {
  const durations: number[] = [];
  for (let call = 0; call < calls; call++) {
    const started = Date.now();
    if (kind === 'read') await bareLookup(`query ${call}`);
    else await barePutNote(`${prefix}-${call}`, `note ${call}`);
    durations.push(Date.now() - started);
  }
  return durations;
}

/** `calls` sends, each waiting for a go-ahead signal first (what an approved write is without a boundary). */
export async function bareApprovedSends(calls: number): Promise<number[]> {
  let waiting = -1;
  let approved = -1;
  setHandler(bareWaitingQuery, () => waiting);
  setHandler(bareApproveSignal, (call) => {
    approved = Math.max(approved, call);
  });
  const durations: number[] = [];
  for (let call = 0; call < calls; call++) {
    const started = Date.now();
    waiting = call;
    await condition(() => approved >= call);
    waiting = -1;
    await bareSendNote('requester', `note ${call}`);
    durations.push(Date.now() - started);
  }
  return durations;
}

/** A turn's tool work without a boundary: three reads at once, then one write. */
export async function bareTurn(id: string): Promise<void> {
  await Promise.all([0, 1, 2].map((index) => bareLookup(`${id} ${index}`)));
  await barePutNote(id, `note of ${id}`);
}

/** A bare agent loop: three model steps around the same tool work, with no checks, store or lookups. */
export async function bareAgentLoop(id: string): Promise<void> {
  await bareModelStep(0);
  await Promise.all([0, 1, 2].map((index) => bareLookup(`${id} ${index}`)));
  await bareModelStep(1);
  await barePutNote(id, `note of ${id}`);
  await bareModelStep(2);
}

/** Nothing at all: the events every workflow has. */
export async function bareNothing(): Promise<void> {}

/** One bare call of the given kind (history events per call). */
export async function bareOne(kind: 'read' | 'write' | 'approved'): Promise<void> {
  if (kind === 'read') await bareLookup('one');
  else if (kind === 'write') await barePutNote('one', 'note');
  else await bareApprovedSends(1);
}

/** What one bare plan turn is given: the request, its task, and whether its write waits for a go-ahead. */
export interface BarePlanInput {
  taskId: string;
  prompt: string;
  /** Waits for `bareGoAhead` before the write (the nearest thing to an approval without a boundary). */
  waitBeforeWrite?: boolean;
  /** Each model step asks for a streamed reply and reads it to its end. */
  stream?: boolean;
}

/** Whether a bare plan turn waits for its go-ahead before the write. */
export const bareWaitingWriteQuery = defineQuery<boolean>('bareWaitingWrite');
/** The go-ahead for the write of a bare plan turn started with `waitBeforeWrite`. */
export const bareGoAheadSignal = defineSignal('bareGoAhead');

/**
 * The bare agent loop over the peer benchmark's plan: model step, search, model step, two reads,
 * model step, write, model step, with the messages kept in the workflow and each step and tool call
 * one plain activity; no checks, records or approvals.
 */
export async function bareAgentPlan(input: BarePlanInput): Promise<{ answer: string; steps: number; toolCalls: number }> {
  let waiting = false;
  let goAhead = !input.waitBeforeWrite;
  setHandler(bareWaitingWriteQuery, () => waiting);
  setHandler(bareGoAheadSignal, () => {
    goAhead = true;
  });
  const messages: ModelMessage[] = [
    { role: 'system', content: `Task id: ${input.taskId}` },
    { role: 'user', content: input.prompt },
  ];
  let toolCalls = 0;
  for (let step = 1; step <= 8; step++) {
    const reply = await (input.stream ? planModelStep(messages, true) : planModelStep(messages));
    if (reply.toolCalls.length === 0) return { answer: reply.text, steps: step, toolCalls };
    messages.push({
      role: 'assistant',
      content: [
        ...(reply.text ? [{ type: 'text' as const, text: reply.text }] : []),
        ...reply.toolCalls.map((call) => ({ type: 'tool-call' as const, ...call })),
      ],
    });
    const results = await Promise.all(
      reply.toolCalls.map(async (call) => {
        toolCalls++;
        if (call.toolName === 'search_local_sources') return planSearch(call.input as SearchArgs);
        if (call.toolName === 'get_document') return planGetDocument(call.input as GetDocumentArgs);
        if (call.toolName !== 'save_draft') return { status: 'error' as const, code: 'unknown_tool', message: `no tool ${call.toolName}` };
        waiting = !goAhead;
        await condition(() => goAhead);
        waiting = false;
        return planSaveDraft({ taskId: input.taskId, ...(call.input as Omit<SaveDraftArgs, 'taskId'>) });
      }),
    );
    messages.push({
      role: 'tool',
      content: reply.toolCalls.map((call, index) => ({
        type: 'tool-result' as const,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output: { type: 'json' as const, value: results[index] as JSONValue },
      })),
    });
  }
  return { answer: '', steps: 8, toolCalls };
}

const { bareReaderStep } = proxyActivities<BareReaderActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/**
 * The bare floor of a subagent: the same model steps (the scripted plan through the AI SDK) and the
 * same lookup as the delegate section's subagent turn, as plain activities, with the messages kept
 * in the workflow; no checks, records or limits.
 */
export async function bareReaderChild(request: string): Promise<string> {
  const messages: ModelMessage[] = [{ role: 'user', content: request }];
  for (let step = 1; step <= 4; step++) {
    const reply = await bareReaderStep(messages);
    if (reply.toolCalls.length === 0) return reply.text;
    messages.push({ role: 'assistant', content: reply.toolCalls.map((call) => ({ type: 'tool-call' as const, ...call })) });
    const results = await Promise.all(reply.toolCalls.map((call) => bareLookup((call.input as { query: string }).query)));
    messages.push({
      role: 'tool',
      content: reply.toolCalls.map((call, index) => ({
        type: 'tool-result' as const,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output: { type: 'json' as const, value: results[index] },
      })),
    });
  }
  return '';
}

/**
 * The bare floor of a delegate call: a parent that runs `bareReaderChild` as a child workflow on its
 * own task queue and returns how long the child took in workflow time (ms), from before its start to
 * its result, as a delegate call's duration is measured.
 */
export async function bareDelegate(request: string): Promise<{ durationMs: number; answer: string }> {
  const started = Date.now();
  const answer = await executeChild(bareReaderChild, { workflowId: `${workflowInfo().workflowId}-child`, args: [request] });
  return { durationMs: Date.now() - started, answer };
}
