import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  proxyLocalActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  MODEL_FAILURES,
  type BoundaryResult,
  type CheckedToolCall,
  type StreamProgress,
  type TurnSettings,
} from '../common/activity-types';
import { BoundaryResults } from '../common/boundary-results';
import { keptArguments } from '../common/call-arguments';
import { CONVERSATION_BOUNDS, TURN_LIMIT_NAMES } from '../common/defaults';
import { AWAITING_APPROVAL_SEARCH_ATTRIBUTE, TASK_ID_SEARCH_ATTRIBUTE } from '../common/search-attributes';
import type { TurnMessage } from '../common/contract/conversation';
import type { ToolEvent } from '../common/contract/tools';
import type {
  AgentTurnInput,
  AgentTurnResult,
  ResolvedTurnLimits,
  ModelInterruption,
  TurnLimits,
  TurnState,
  Usage,
} from '../common/contract/turn';
import type { TurnStatus } from '../common/codes';
import { unencryptedMode } from '../common/unencrypted';
import { ApprovalBook } from './approval-book';
import { jsonBytes } from './conversation-history';
import { EFFECT_STRATEGIES } from './effects';
import { ResolutionBook } from './resolutions';
import { ResumeGate } from './resume-gate';
import { takeTurnMessages } from './turn-messages';
import { TurnTelemetry } from './turn-telemetry';

/** What a turn does with a stream cut off after chunks went out. */
type StreamSettings = Required<TurnSettings>['interruptedStreams'];

// Retried only before the first chunk: the activity throws stream_interrupted once one went out.
const { modelStep } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  summary: 'model step',
  retry: {
    maximumAttempts: 4,
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    nonRetryableErrorTypes: [MODEL_FAILURES.invalidModel, MODEL_FAILURES.streamInterrupted, MODEL_FAILURES.error],
  },
});

const { turnSettings } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  summary: 'turn settings',
  retry: { maximumAttempts: 5 },
});

/**
 * What a turn runs under: the worker's config (asked once at the turn's start, so it is recorded in
 * history), its limits lowered or raised by the turn's own, and whether decisions must name their
 * digest and be signed.
 */
async function settingsFor(own: TurnLimits | undefined): Promise<{
  limits: ResolvedTurnLimits;
  requireDigest: boolean;
  signing?: ApprovalBook['signing'];
  streams: StreamSettings;
  metrics: boolean;
  outcomes: TurnSettings['outcomes'];
}> {
  const settings = await turnSettings();
  const { requireDigest, publicKeys, signatureMaxAgeMs } = settings.approvals;
  const signing = publicKeys ? { publicKeys, maxAgeMs: signatureMaxAgeMs ?? 0 } : undefined;
  const limits = { ...settings.limits, ...own };
  const metrics = settings.telemetry?.metrics ?? false;
  return { limits, requireDigest, signing, streams: settings.interruptedStreams, metrics, outcomes: settings.outcomes };
}

/** What had streamed before the break, from the failure's details. */
function streamProgress(error: unknown): StreamProgress {
  const details = error instanceof ActivityFailure && error.cause instanceof ApplicationFailure ? error.cause.details?.[0] : undefined;
  const { chunks, text } = (details ?? {}) as Partial<StreamProgress>;
  return { chunks: typeof chunks === 'number' ? chunks : 0, text: typeof text === 'string' ? text : '' };
}

/** Why a model step failed for good; an invalid model fails the workflow instead (the caller's mistake). */
function modelFailure(error: unknown): { type: string; message: string } | undefined {
  if (!(error instanceof ActivityFailure)) return undefined;
  const cause = error.cause;
  if (cause instanceof ApplicationFailure && cause.type === MODEL_FAILURES.invalidModel) return undefined;
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? MODEL_FAILURES.error, message: cause.message };
  return { type: MODEL_FAILURES.unavailable, message: cause?.message ?? error.message };
}

function invalidInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'invalid_input', message: `agentTurn input: ${message}`, nonRetryable: true });
}

function checkInput(input: unknown): asserts input is AgentTurnInput {
  if (!input || typeof input !== 'object') throw invalidInput('expected an object { taskId, prompt, model?, tools?, limits? }');
  if (unencryptedMode(input) === 'all') throw invalidInput('the input arrived unencrypted; encryption.requireEncrypted is "all"');
  const { taskId, prompt, tools, limits, history, tokenAllowance } = input as Record<string, unknown>;
  if (history !== undefined && !Array.isArray(history)) throw invalidInput('history must be a list of messages');
  // A history is carried into every model step's input: past this bound the steps would pass Temporal's payload limit.
  const historyBytes = history === undefined ? 0 : jsonBytes(history);
  if (historyBytes > CONVERSATION_BOUNDS.inputBytes) {
    throw invalidInput(`history is ${historyBytes} bytes of JSON; at most ${CONVERSATION_BOUNDS.inputBytes} are taken`);
  }
  if (typeof taskId !== 'string' || taskId.trim() === '') throw invalidInput('taskId must be a non-empty string');
  if (typeof prompt !== 'string' || prompt.trim() === '') throw invalidInput('prompt must be a non-empty string');
  if (tools !== undefined && (!Array.isArray(tools) || tools.some((tool) => typeof tool !== 'string'))) {
    throw invalidInput('tools must be a list of tool names');
  }
  if (limits !== undefined) {
    if (!limits || typeof limits !== 'object') throw invalidInput('limits must be an object');
    for (const [key, value] of Object.entries(limits)) {
      if (!TURN_LIMIT_NAMES.includes(key)) throw invalidInput(`limits.${key} is not a limit (${TURN_LIMIT_NAMES.join(', ')})`);
      if (!isWholeNumber(value)) throw invalidInput(`limits.${key} must be a whole number`);
    }
  }
  if (tokenAllowance !== undefined && !isWholeNumber(tokenAllowance)) throw invalidInput('tokenAllowance must be a whole number');
}

function isWholeNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** The turn's token budget: the smaller of its limit and its conversation's allowance, when either is set. */
function tokenBudgetOf(limits: ResolvedTurnLimits, allowance: number | undefined): number | undefined {
  const bounds = [limits.maxTokens, allowance].filter((bound): bound is number => bound !== undefined);
  return bounds.length === 0 ? undefined : Math.min(...bounds);
}

/**
 * Whether the next model step would pass the token budget: the usage so far has reached it, or the
 * usage plus the last step's input tokens passes it (the next step's prompt holds the whole last
 * prompt, so it costs at least that much).
 */
export function wouldPassTokenBudget(usage: Usage, lastInputTokens: number, budget: number): boolean {
  const used = usage.inputTokens + usage.outputTokens;
  return used >= budget || used + lastInputTokens > budget;
}

/**
 * One agent turn: model steps and the tool calls they ask for, until a final answer or a limit.
 * Every tool call passes the boundary; refused calls never run, and every call leaves a ToolEvent.
 */
export async function agentTurn(input: AgentTurnInput): Promise<AgentTurnResult> {
  checkInput(input);
  const telemetry = new TurnTelemetry();
  return telemetry.turnSpan(input.taskId, () => runTurn(input, telemetry));
}

async function runTurn(input: AgentTurnInput, telemetry: TurnTelemetry): Promise<AgentTurnResult> {
  const { taskId, prompt, model, tools: allowedTools } = input;
  // TollgateClient sets both search attributes at the start, so such a turn records no upsert; a
  // turn started by another client (the Temporal CLI, another SDK) sets the task id here.
  const started = workflowInfo().typedSearchAttributes;
  if (started.get(TASK_ID_SEARCH_ATTRIBUTE) !== taskId || started.get(AWAITING_APPROVAL_SEARCH_ATTRIBUTE) === undefined) {
    upsertSearchAttributes([{ key: TASK_ID_SEARCH_ATTRIBUTE, value: taskId }]);
  }

  const events: ToolEvent[] = [];
  // The live view reads the usage so far from the state, against the budget when there is one.
  const usage: Usage = { inputTokens: 0, outputTokens: 0 };
  const state: TurnState = {
    taskId,
    status: 'running',
    phase: 'model',
    step: 0,
    pendingApprovals: [],
    decisions: [],
    rejectedDecisions: [],
    rejectedDecisionsDropped: 0,
    toolCalls: events,
    modelInterruptions: [],
    usage,
  };
  const approvals = new ApprovalBook(state);
  const resumes = new ResumeGate(state, approvals);
  const resolutions = new ResolutionBook(state, approvals);
  takeTurnMessages({ state, approvals, resolutions, resumes });

  const { limits, requireDigest, signing, streams, metrics, outcomes } = await settingsFor(input.limits);
  approvals.allowedTools = allowedTools;
  approvals.requireDigest = requireDigest;
  approvals.signing = signing;
  approvals.historyLimits = { maxEvents: limits.maxHistoryEvents, maxBytes: limits.maxHistoryBytes };
  approvals.telemetry = telemetry;
  telemetry.metrics = metrics;
  resolutions.mode = outcomes.onUnknown;
  resolutions.timeoutMs = outcomes.resolveTimeoutMs;
  const messages: TurnMessage[] = [...(input.history ?? []), { role: 'user', content: prompt }];
  const budget = tokenBudgetOf(limits, input.tokenAllowance);
  if (budget !== undefined) state.tokenBudget = budget;
  let lastInputTokens = 0;
  let answer: string | undefined;
  let status: TurnStatus | undefined;
  let error: AgentTurnResult['error'];
  let partialText: string | undefined;
  let errors = 0;
  const startedAt = Date.now();

  for (let step = 0; step < limits.maxSteps && !status; step++) {
    state.step = step;
    state.phase = 'model';
    if (Date.now() - startedAt > limits.deadlineMs) {
      status = 'deadline_exceeded';
      break;
    }
    if (nearHistoryLimits(limits)) {
      status = 'history_limit';
      break;
    }
    if (budget !== undefined && wouldPassTokenBudget(usage, lastInputTokens, budget)) {
      status = 'token_budget_exhausted';
      break;
    }
    let reply: Awaited<ReturnType<typeof modelStep>>;
    try {
      reply = await modelStep({ taskId, step, model, messages, allowedTools });
    } catch (failure) {
      const problem = modelFailure(failure);
      if (!problem) throw failure;
      if (problem.type === MODEL_FAILURES.streamInterrupted) {
        const progress = streamProgress(failure);
        const next = await afterInterruption({ step, message: problem.message, progress, streams, resumes });
        state.modelInterruptions.push(next.interruption);
        if (next.decision === 'retry') {
          // The same step again, asked for by a person: its call ids stay those of this step.
          step--;
          continue;
        }
        if (next.decision === 'fresh_step' && errors + 1 <= limits.errorBudget) {
          errors++;
          continue;
        }
        error = { type: problem.type, message: next.message };
        partialText = progress.text;
        status = 'model_failed';
        break;
      }
      error = problem;
      status = 'model_failed';
      break;
    }
    usage.inputTokens += reply.usage.inputTokens;
    usage.outputTokens += reply.usage.outputTokens;
    lastInputTokens = reply.usage.inputTokens;
    // The calls run from the reply; the messages later steps are sent keep large arguments by reference only.
    const kept = reply.toolCalls.map(({ callId, tool, args, argsDigest }) => ({ callId, tool, args: keptArguments(args, argsDigest) }));
    messages.push({ role: 'assistant', text: reply.text, toolCalls: kept });
    if (reply.toolCalls.length === 0) {
      answer = reply.text;
      status = 'completed';
      break;
    }
    if (events.length + reply.toolCalls.length > limits.maxToolCalls) {
      status = 'tool_call_limit';
      break;
    }

    state.phase = 'tools';
    // Reads of one step run concurrently; writes one after another, in the model's order.
    const reads = reply.toolCalls.map((call) =>
      runsConcurrently(call) ? executeCall({ taskId, step, call, allowedTools, approvals, resolutions }) : undefined,
    );
    const executed: Array<Awaited<ReturnType<typeof executeCall>>> = [];
    for (const [index, call] of reply.toolCalls.entries()) {
      executed.push(await (reads[index] ?? executeCall({ taskId, step, call, allowedTools, approvals, resolutions })));
    }
    for (const { call, outcome, event } of executed) {
      events.push(event);
      messages.push({ role: 'tool', callId: call.callId, tool: call.tool, result: outcome.result });
      if (event.status === 'error') errors++;
    }
    approvals.publish();
    if (errors > limits.errorBudget) status = 'error_budget_exhausted';
  }

  const finalStatus: TurnStatus = status ?? 'step_limit';
  state.status = finalStatus;
  state.phase = 'finished';
  approvals.publish();
  return {
    taskId,
    status: finalStatus,
    ...(error ? { error } : {}),
    ...(partialText !== undefined ? { partialText } : {}),
    modelInterruptions: state.modelInterruptions,
    answer,
    steps: state.step + 1,
    toolCalls: events,
    usage,
    ...(budget !== undefined ? { tokenBudget: budget } : {}),
  };
}

/**
 * What follows a stream cut off after chunks went out, by `model.onInterruptedStream`: a person's
 * decision (`ask`, waiting at most `model.resumeTimeout`; no decision stops the turn), a stop, or
 * a fresh step unasked (`fresh_step`, which breaks the rule that a started stream is never replayed
 * without a person, for batch turns nobody watches). The message is the turn's error if it stops.
 */
async function afterInterruption({
  step,
  message,
  progress,
  streams,
  resumes,
}: {
  step: number;
  message: string;
  progress: StreamProgress;
  streams: StreamSettings;
  resumes: ResumeGate;
}): Promise<{ decision: ModelInterruption['decision']; interruption: ModelInterruption; message: string }> {
  const { onInterruptedStream, resumeTimeoutMs } = streams;
  if (onInterruptedStream === 'fresh_step') {
    return { decision: 'fresh_step', interruption: { step, message, decision: 'fresh_step' }, message };
  }
  if (onInterruptedStream === 'stop') {
    return {
      decision: 'stop',
      interruption: { step, message, decision: 'stop' },
      message: `${message}; stopped (model.onInterruptedStream is "stop")`,
    };
  }
  const since = Date.now();
  const decided = await resumes.wait(
    {
      step,
      chunks: progress.chunks,
      partialText: progress.text,
      since: new Date(since).toISOString(),
      expiresAt: new Date(since + resumeTimeoutMs).toISOString(),
    },
    resumeTimeoutMs,
  );
  if (!decided) {
    const waited = `nobody decided within ${resumeTimeoutMs / 1000} s (model.resumeTimeout)`;
    return { decision: 'timeout', interruption: { step, message, decision: 'timeout' }, message: `${message}; stopped: ${waited}` };
  }
  const by = decided.by ? { by: decided.by } : {};
  const interruption: ModelInterruption = { step, message, decision: decided.decision, ...by };
  const stopped = `${message}; stopped by the resume decision${decided.by ? ` of ${decided.by}` : ''}`;
  return { decision: decided.decision, interruption, message: stopped };
}

/**
 * Whether the turn's history has reached its limits, checked before each model step (the step that
 * would add the most). The server reports the size and event count with each workflow task, so
 * a replay sees the same values. `continueAsNewSuggested` is not used: the server suggests it far
 * below the hard limits, and a turn cannot continue as new without losing its calls in flight, so
 * it ends with `history_limit` instead; a conversation carries on with its next turn.
 */
function nearHistoryLimits(limits: ResolvedTurnLimits): boolean {
  const { historyLength, historySize } = workflowInfo();
  return historyLength >= limits.maxHistoryEvents || historySize >= limits.maxHistoryBytes;
}

/** Refused calls and reads run at once; writes wait for the calls before them. */
function runsConcurrently(call: CheckedToolCall): boolean {
  return call.refusal !== undefined || EFFECT_STRATEGIES[call.policy.effect].concurrent;
}

/** Runs one checked call by its effect's strategy, and records its event. */
async function executeCall({
  taskId,
  step,
  call,
  allowedTools,
  approvals,
  resolutions,
}: {
  taskId: string;
  step: number;
  call: CheckedToolCall;
  allowedTools?: string[];
  approvals: ApprovalBook;
  resolutions?: ResolutionBook;
}): Promise<{ call: CheckedToolCall; outcome: BoundaryResult; event: ToolEvent }> {
  return approvals.telemetry.toolSpan(call, () => runCall({ taskId, step, call, allowedTools, approvals, resolutions }));
}

async function runCall({
  taskId,
  step,
  call,
  allowedTools,
  approvals,
  resolutions,
}: {
  taskId: string;
  step: number;
  call: CheckedToolCall;
  allowedTools?: string[];
  approvals: ApprovalBook;
  resolutions?: ResolutionBook;
}): Promise<{ call: CheckedToolCall; outcome: BoundaryResult; event: ToolEvent }> {
  const startedAt = Date.now();
  const outcome = call.refusal
    ? BoundaryResults.refused(call.refusal.code, call.refusal.message)
    : await EFFECT_STRATEGIES[call.policy.effect].run({ taskId, call, allowedTools, approvals, resolutions });
  const event: ToolEvent = {
    callId: call.callId,
    step,
    tool: call.tool,
    effect: call.policy?.effect ?? 'unknown',
    status: outcome.result.status,
    code: outcome.result.code,
    attempts: outcome.executions,
    durationMs: Date.now() - startedAt,
    originalSize: outcome.originalSize,
    truncated: outcome.truncated,
    ...(outcome.edit ? { edit: outcome.edit } : {}),
  };
  return { call, outcome, event };
}
