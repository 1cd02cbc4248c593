import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { BoundaryResult, ModelStepInput, RunToolInput } from '../common/activity-types';
import type { TurnMessage } from '../common/contract/conversation';
import type { ToolResult } from '../common/contract/tools';
import { FAILURE_TYPE } from '../common/failures';
import { isResultReference, RESULT_BY_REFERENCE_CHARS, type StepMessage, type TranscriptReference } from '../common/kept-results';
import type { IdempotencyStore } from '../intents/intent-store';

/** The failure type of a model step whose referenced content the store does not have (or has changed). */
const KEPT_CONTENT_MISSING = FAILURE_TYPE.kept_content_missing;

/** Whether a worker keeps contents in its store: `store.keepContents`, and never with encrypted payloads (the store holds plain JSON). */
export function keepsContents(config: { store: { keepContents: boolean }; encryption: { keysEnv?: string } }): boolean {
  return config.store.keepContents && !config.encryption.keysEnv;
}

/** How a worker's store is named in a failure: its backend and, for SQLite, its file. */
export function storeName(store: { backend: string; sqliteFile: string }): string {
  return store.backend === 'sqlite' ? `the SQLite store ${store.sqliteFile}` : 'the PostgreSQL store';
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The workflow id of the activity running now, or undefined outside an activity (a test calling it directly). */
export function currentWorkflowId(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.workflowId;
  } catch {
    return undefined;
  }
}

const resultKey = (workflowId: string, callId: string, digest: string) => `${workflowId}/${callId}/${digest}`;
const transcriptKey = (workflowId: string, { count, digest }: TranscriptReference) => `${workflowId}/transcript/${count}/${digest}`;

/**
 * `runTool` that keeps a large result (its JSON over RESULT_BY_REFERENCE_CHARS, as redacted for the
 * history) once in the store and returns with it the reference later model steps are sent. When the
 * store cannot keep contents, or keeping fails, the result goes whole as before: a store fault costs
 * history size, never the call.
 */
export function keepingResults(
  runTool: (input: RunToolInput) => Promise<BoundaryResult>,
  store: IdempotencyStore,
  { enabled }: { enabled: boolean },
): (input: RunToolInput) => Promise<BoundaryResult> {
  return async (input) => {
    const outcome = await runTool(input);
    const workflowId = currentWorkflowId();
    if (!enabled || !store.keepContent || !workflowId) return outcome;
    const content = JSON.stringify(outcome.result);
    if (content.length <= RESULT_BY_REFERENCE_CHARS) return outcome;
    const digest = sha256(content);
    try {
      await store.keepContent({ key: resultKey(workflowId, input.callId, digest), taskId: input.taskId, digest, content });
    } catch {
      return outcome;
    }
    return { ...outcome, kept: { $ref: 'result', digest, chars: content.length } };
  };
}

/** Where a model step reads what its turn kept: the store, its name for failures, and the turn's workflow id. */
export interface KeptSource {
  store: Pick<IdempotencyStore, 'readContent' | 'keepContent'>;
  storeName: string;
  workflowId: string;
}

/** Reads one kept content and checks its digest; a missing or changed one fails the step with KEPT_CONTENT_MISSING, naming it. */
async function readKept({ store, storeName: where }: KeptSource, key: string, digest: string, what: string): Promise<string> {
  if (!store.readContent) {
    throw ApplicationFailure.nonRetryable(
      `${what} is kept by reference, but this worker's store (${where}) cannot read kept contents`,
      KEPT_CONTENT_MISSING,
    );
  }
  const kept = await store.readContent(key).catch((error: unknown) => {
    throw ApplicationFailure.retryable(`${what} could not be read from ${where}: ${(error as Error).message}`, KEPT_CONTENT_MISSING);
  });
  if (!kept) {
    throw ApplicationFailure.retryable(
      `${what} is not in ${where}: every worker of a task queue must share one store (one store.sqliteFile on one machine, store.backend postgres across machines), and a turn must end within the store's retention`,
      KEPT_CONTENT_MISSING,
    );
  }
  if (kept.digest !== digest || sha256(kept.content) !== digest) {
    throw ApplicationFailure.nonRetryable(`${what} changed in ${where}: its digest differs`, KEPT_CONTENT_MISSING);
  }
  return kept.content;
}

/**
 * One kept link of a turn's transcript: the messages a step was sent after those of the link
 * before it. Each step keeps only what was added since the previous one, so the store holds every
 * message once however many steps the turn has (a conversation's long history included).
 */
interface TranscriptLink {
  previous: TranscriptReference | null;
  added: StepMessage[];
}

/** A model step's whole message list as sent: the earlier transcript read back link by link, then the messages added since. */
export async function stepMessages(input: Pick<ModelStepInput, 'messages' | 'earlier'>, source: KeptSource): Promise<StepMessage[]> {
  const parts: StepMessage[][] = [input.messages];
  let next = input.earlier;
  while (next) {
    const { count, digest } = next;
    const what = `the turn's messages 1 to ${count} (digest ${digest}, kept by an earlier model step)`;
    const link = JSON.parse(await readKept(source, transcriptKey(source.workflowId, next), digest, what)) as TranscriptLink;
    parts.unshift(link.added);
    next = link.previous ?? undefined;
  }
  const messages = parts.flat();
  if (input.earlier && messages.length !== input.earlier.count + input.messages.length) {
    throw ApplicationFailure.nonRetryable(
      `the turn's kept transcript holds ${messages.length - input.messages.length} messages where its reference counts ${input.earlier.count}`,
      KEPT_CONTENT_MISSING,
    );
  }
  return messages;
}

/**
 * Keeps the messages a step was sent, as a link to the previous step's transcript and the messages
 * added since, so the next step is sent only what follows them; undefined when the store cannot
 * keep them or keeping failed (the next step is then sent every message).
 */
export async function keepTranscript(
  input: Pick<ModelStepInput, 'messages' | 'earlier'>,
  source: KeptSource,
  taskId: string,
): Promise<TranscriptReference | undefined> {
  if (!source.store.keepContent) return undefined;
  const link: TranscriptLink = { previous: input.earlier ?? null, added: input.messages };
  const content = JSON.stringify(link);
  const reference = { count: (input.earlier?.count ?? 0) + input.messages.length, digest: sha256(content) };
  try {
    await source.store.keepContent({ key: transcriptKey(source.workflowId, reference), taskId, digest: reference.digest, content });
    return reference;
  } catch {
    return undefined;
  }
}

/**
 * A model step's messages with every referenced result read back from the store and checked
 * against its digest. A reference the store cannot answer fails the step with
 * KEPT_CONTENT_MISSING, naming the call and the store (retried as the step's attempts allow, then
 * the turn ends `model_failed` saying so): the model is never sent anything but the result itself.
 */
export async function resolveKeptResults(messages: StepMessage[], source: KeptSource): Promise<TurnMessage[]> {
  const resolved: TurnMessage[] = [];
  for (const message of messages) {
    if (message.role !== 'tool' || !isResultReference(message.result)) {
      resolved.push(message as TurnMessage);
      continue;
    }
    const { digest, chars } = message.result;
    const what = `the result of call ${message.callId} (${message.tool}, ${chars.toLocaleString('en-US')} characters, digest ${digest})`;
    const content = await readKept(source, resultKey(source.workflowId, message.callId, digest), digest, what);
    resolved.push({ role: 'tool', callId: message.callId, tool: message.tool, result: JSON.parse(content) as ToolResult });
  }
  return resolved;
}
