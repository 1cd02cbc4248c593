import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';

/** One history to replay, and where it came from (a file, or a workflow on a server). */
export interface HistorySource {
  source: string;
  workflowId: string;
  history: unknown;
}

/** What replaying one history on the current workflow code showed. */
export interface ReplayOutcome {
  source: string;
  workflowId: string;
  /** `replays`: the code makes the recorded commands; `breaks`: it makes other ones (a determinism violation); `error`: replay failed otherwise. */
  verdict: 'replays' | 'breaks' | 'error';
  /** The first diverging command, as the SDK's DeterminismViolationError names it, or the failure's message. */
  message?: string;
}

type RecordedEvent = { startChildWorkflowExecutionInitiatedEventAttributes?: { workflowId?: string } };

/**
 * The id the workflow ran under, which replay needs when the code derives ids from it (a
 * conversation names its turns `<id>-turn-<n>`, a delegate call its subagent's `<id>-call-<callId>`): named in the
 * file, else read from the first child turn, else the file's name.
 */
function workflowIdOf(file: string, data: { workflowId?: unknown; events?: RecordedEvent[] }): string {
  if (typeof data.workflowId === 'string' && data.workflowId) return data.workflowId;
  const child = data.events?.find((event) => event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId);
  const childId = child?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
  const match = childId ? /^(.+)-(?:turn-\d+|call-call-\d+-\d+)$/.exec(childId) : null;
  return match ? match[1] : path.basename(file, '.json');
}

/**
 * Reads an exported history: the JSON `temporal workflow show --output json` prints (`{ "events": [...] }`),
 * or `{ "workflowId": "...", "history": { "events": [...] } }`. A file that is neither is an error naming it.
 */
export function readHistoryFile(file: string): HistorySource {
  if (!existsSync(file) || !statSync(file).isFile()) throw new Error(`${file}: no such history file`);
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: not JSON (${(error as Error).message.split('\n')[0]})`, { cause: error });
  }
  const wrapped = data as { workflowId?: unknown; history?: { events?: unknown } };
  const history = (wrapped?.history ?? data) as { events?: RecordedEvent[] };
  if (!history || !Array.isArray(history.events) || history.events.length === 0) {
    throw new Error(`${file}: not a workflow history (expected the "events" array that \`temporal workflow show --output json\` prints)`);
  }
  return { source: file, workflowId: workflowIdOf(file, { ...history, workflowId: wrapped.workflowId }), history };
}

/** The histories of the workflows a visibility query finds (such as `TollgateAwaitingApproval = true`), fetched one by one. */
export async function* historiesFromQuery(client: Client, query: string): AsyncIterable<HistorySource> {
  for await (const execution of client.workflow.list({ query })) {
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    yield { source: `${execution.workflowId} (run ${execution.runId})`, workflowId: execution.workflowId, history };
  }
}

/** The workflows entry point a path names: a folder's index.ts, or the file itself. */
export function workflowsEntry(given: string): string {
  const resolved = path.resolve(given);
  if (!existsSync(resolved)) throw new Error(`--workflows ${given}: no such file or folder`);
  if (!statSync(resolved).isDirectory()) return resolved;
  // A folder of Tollgate's own workflows registers tollgate-workflows.ts (its index also exports executeAgent, no workflow type).
  const entries = ['tollgate-workflows.ts', 'tollgate-workflows.js', 'index.ts', 'index.js'];
  const index = entries.map((name) => path.join(resolved, name)).find((candidate) => existsSync(candidate));
  if (!index) throw new Error(`--workflows ${given}: the folder holds no tollgate-workflows.ts, index.ts or index.js`);
  return index;
}

/** The line of a determinism violation that names the diverging command, without the SDK's preamble. */
function firstDivergence(error: Error): string {
  const message = error.message.replace(/\\"/g, '"');
  const nondeterminism = /Nondeterminism error: ([^"]+?)(?:"|$)/.exec(message);
  return nondeterminism ? nondeterminism[1].trim() : message.split('\n')[0];
}

/**
 * Replays each history on the workflow code at `workflowsPath` with one replay worker, in order,
 * and says for each whether it replays or would break, with the first diverging command.
 */
export async function replayHistories(workflowsPath: string, histories: AsyncIterable<HistorySource> | Iterable<HistorySource>) {
  try {
    // The replay worker's state changes and its failed workflow tasks (reported below) are not news here;
    // errors still show, on stderr, so that --json output stays JSON.
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
    });
  } catch {
    // A runtime is already installed (in a process that replays twice); its logger stays.
  }
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath,
    logger: new DefaultLogger('WARN'),
  });
  const sources: HistorySource[] = [];
  async function* feed() {
    for await (const entry of histories) {
      sources.push(entry);
      yield { workflowId: entry.workflowId, history: entry.history };
    }
  }
  const outcomes: ReplayOutcome[] = [];
  for await (const result of Worker.runReplayHistories({ workflowBundle }, feed())) {
    const { source, workflowId } = sources[outcomes.length];
    if (!result.error) outcomes.push({ source, workflowId, verdict: 'replays' });
    else if (result.error instanceof DeterminismViolationError) {
      outcomes.push({ source, workflowId, verdict: 'breaks', message: firstDivergence(result.error) });
    } else outcomes.push({ source, workflowId, verdict: 'error', message: result.error.message.split('\n')[0] });
  }
  return outcomes;
}
