import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../common/activity-types';
import { MODEL_FAILURES, MODEL_STEP_NON_RETRYABLE, type CheckedToolCall, type StreamProgress } from '../../common/activity-types';
import { keptArguments } from '../../common/call-arguments';
import { DEFAULT_MODEL_HEARTBEAT_TIMEOUT_MS } from '../../common/defaults';
import type { ModelInterruption, TurnState, Usage } from '../../common/contract/turn';
import type { TurnDecisions } from '../decisions/turn-decisions';
import { historyReached } from './history-limits';
import type { StreamSettings } from './settings';
import type { TurnRun } from './turn-run';

/**
 * The model step activity, with the heartbeat timeout of the turn's settings. Retried only before
 * the first chunk: the activity throws stream_interrupted once one went out.
 */
function modelStepActivity(heartbeatTimeoutMs = DEFAULT_MODEL_HEARTBEAT_TIMEOUT_MS, agent?: string) {
  return proxyActivities<Activities>({
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: heartbeatTimeoutMs,
    // The Web UI names the agent whose step it is (a handoff changes it from the next step on).
    summary: agent ? `model step · agent ${agent}` : 'model step',
    retry: {
      maximumAttempts: 4,
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      nonRetryableErrorTypes: [...MODEL_STEP_NON_RETRYABLE],
    },
  }).modelStep;
}

/** What one model step leaves for the turn: the calls to run, the same step again, the next step, or the end (the run's `status`). */
export type ModelPhaseOutcome = { calls: CheckedToolCall[] } | 'same_step' | 'next_step' | 'ended';

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

/**
 * Whether the next model step would pass the token budget: the usage so far has reached it, or the
 * usage plus the last step's input tokens passes it (the next step's prompt holds the whole last
 * prompt, so it costs at least that much).
 */
export function wouldPassTokenBudget(usage: Usage, lastInputTokens: number, budget: number): boolean {
  const used = usage.inputTokens + usage.outputTokens;
  return used >= budget || used + lastInputTokens > budget;
}

/** Why the turn may not start another model step (its deadline, its history, its token budget), or nothing. */
function stopBeforeStep(run: TurnRun): TurnRun['status'] {
  const { limits } = run.settings;
  if (Date.now() - run.startedAt > limits.deadlineMs) return 'deadline_exceeded';
  // The steps of the turn's subagents count against its own.
  if (run.delegated && run.state.step + run.delegated.steps >= limits.maxSteps) return 'step_limit';
  if (historyReached(limits)) return 'history_limit';
  if (run.budget !== undefined && wouldPassTokenBudget(run.usage, run.lastInputTokens, run.budget)) return 'token_budget_exhausted';
  return undefined;
}

/**
 * The model phase of one step: the limits checked, one model step, its usage counted and its reply
 * added to the messages. A stream cut off after chunks went out goes by `model.onInterruptedStream`
 * (see {@link afterInterruption}); any other failure ends the turn `model_failed`.
 */
export async function modelPhase(run: TurnRun, step: number): Promise<ModelPhaseOutcome> {
  const { input, state, settings, usage, messages } = run;
  state.step = step;
  state.phase = 'model';
  run.status = stopBeforeStep(run);
  if (run.status) return 'ended';
  const { taskId } = input;
  // The turn's model, else its agent's, else the config's default (the step resolves that one).
  const model = input.model ?? settings.agent?.model;
  const { allowedTools, agent } = run;
  const named = { ...(model !== undefined ? { model } : {}), ...(allowedTools ? { allowedTools } : {}), ...(agent ? { agent } : {}) };
  let reply: Awaited<ReturnType<Activities['modelStep']>>;
  try {
    // The messages the last step kept are sent by reference: each step records only what was added since.
    const { transcript } = run;
    const sent = transcript ? { messages: messages.slice(transcript.count), earlier: transcript } : { messages };
    reply = await modelStepActivity(settings.streams.heartbeatTimeoutMs, agent?.name)({ taskId, step, ...sent, ...named });
  } catch (failure) {
    const problem = modelFailure(failure);
    if (!problem) throw failure;
    if (problem.type !== MODEL_FAILURES.streamInterrupted) {
      Object.assign(run, { error: problem, status: 'model_failed' });
      return 'ended';
    }
    const progress = streamProgress(failure);
    const next = await afterInterruption({ step, message: problem.message, progress, streams: settings.streams, decisions: run.decisions });
    state.modelInterruptions.push(next.interruption);
    // The same step again, asked for by a person: its call ids stay those of this step.
    if (next.decision === 'retry') return 'same_step';
    if (next.decision === 'fresh_step' && run.errors + 1 <= settings.limits.errorBudget) {
      run.errors++;
      return 'next_step';
    }
    Object.assign(run, { error: { type: problem.type, message: next.message }, partialText: progress.text, status: 'model_failed' });
    return 'ended';
  }
  if (reply.transcript && reply.transcript.count === messages.length) run.transcript = reply.transcript;
  usage.inputTokens += reply.usage.inputTokens;
  usage.outputTokens += reply.usage.outputTokens;
  run.lastInputTokens = reply.usage.inputTokens;
  // The calls run from the reply; the messages later steps are sent keep large arguments by reference only.
  const kept = reply.toolCalls.map(({ callId, tool, args, argsDigest }) => ({ callId, tool, args: keptArguments(args, argsDigest) }));
  messages.push({ role: 'assistant', text: reply.text, toolCalls: kept });
  if (reply.text) showModelText(run.state, reply.text);
  if (reply.toolCalls.length === 0) return finalAnswer(run, reply);
  if (run.events.length + (run.delegated?.toolCalls ?? 0) + reply.toolCalls.length > settings.limits.maxToolCalls) {
    run.status = 'tool_call_limit';
    return 'ended';
  }
  return { calls: reply.toolCalls };
}

/** How many characters of what did not fit are sent back to the model, and kept in the turn's error. */
const OUTPUT_PROBLEMS_CHARS = 2_000;

/**
 * A reply without tool calls: the turn's answer. An agent with an output schema has it checked (by
 * the model step, where the schema is): one that fits is the turn's `output`; one that does not is
 * sent back with what was wrong, at most `outputRetries` times, then the turn ends `output_invalid`
 * with the last answer kept.
 */
function finalAnswer(run: TurnRun, reply: Awaited<ReturnType<Activities['modelStep']>>): ModelPhaseOutcome {
  run.answer = reply.text;
  const checked = run.settings.agent?.output ? reply.output : undefined;
  if (!checked || checked.valid) {
    if (checked) run.output = checked.value;
    run.status = 'completed';
    return 'ended';
  }
  const problems = checked.problems.slice(0, OUTPUT_PROBLEMS_CHARS);
  if (run.outputRetries < run.settings.agent!.outputRetries) {
    run.outputRetries++;
    run.messages.push({
      role: 'user',
      content: `Your answer does not fit the output schema:\n${problems}\nAnswer again with only the JSON value that fits it.`,
    });
    return 'next_step';
  }
  Object.assign(run, { status: 'output_invalid', error: { type: 'output_invalid', message: problems } });
  return 'ended';
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
  decisions,
}: {
  step: number;
  message: string;
  progress: StreamProgress;
  streams: StreamSettings;
  decisions: TurnDecisions;
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
  const decided = await decisions.awaitResume(
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

/** The most characters of the model's text the state keeps (its newest), for the people who decide. */
export const MODEL_TEXT_SHOWN_CHARS = 8_000;

/** Adds a step's text to what the state shows of the model's text so far (memory only: a query's answer is not recorded). */
function showModelText(state: TurnState, text: string): void {
  const joined = state.modelText ? `${state.modelText}\n\n${text}` : text;
  state.modelText = joined.length > MODEL_TEXT_SHOWN_CHARS ? joined.slice(joined.length - MODEL_TEXT_SHOWN_CHARS) : joined;
}
