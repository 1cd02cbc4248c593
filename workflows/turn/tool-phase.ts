import type { BoundaryResult, CheckedToolCall } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { ToolEvent } from '../../common/contract/tools';
import type { StepMessage } from '../../common/kept-results';
import { EFFECT_TRAITS } from '../../common/effects';
import { EFFECT_STRATEGIES } from '../effects';
import type { TurnRun } from './turn-run';
import { applyHandoff, handoffOutcome } from './handoff';
import { runDelegateCall } from '../delegation/delegate-call';
import { shareOutDelegation } from '../delegation/child-limits';

type Executed = { call: CheckedToolCall; outcome: BoundaryResult; event: ToolEvent };

/** Refused calls and reads run at once; writes wait for the calls before them. */
function runsConcurrently(call: CheckedToolCall): boolean {
  // Delegate calls run at once too, at most `maxConcurrentSubagents` of them (delegation/delegate-call.ts).
  return (
    call.refusal !== undefined ||
    call.handoff !== undefined ||
    call.delegate !== undefined ||
    EFFECT_TRAITS[call.policy.effect].concurrentInStep
  );
}

/** Runs one checked call by its effect's strategy inside its span, and records its event. */
function executeCall(run: TurnRun, step: number, call: CheckedToolCall): Promise<Executed> {
  return run.telemetry.toolSpan(call, () => runCall(run, step, call));
}

async function runCall(run: TurnRun, step: number, checked: CheckedToolCall): Promise<Executed> {
  const { input, decisions, allowedTools, agent } = run;
  const { taskId } = input;
  const { approvals, resolutions } = decisions;
  const startedAt = Date.now();
  // The agent goes with the call to the worker that runs it, which refuses it when it declares the agent differently.
  const call = agent && !checked.refusal ? { ...checked, agent: { name: agent.name, digest: agent.digest } } : checked;
  const outcome = call.refusal
    ? BoundaryResults.refused(call.refusal.code, call.refusal.message)
    : call.handoff
      ? handoffOutcome(run, step, call)
      : call.delegate
        ? await runDelegateCall(run, call, run.delegated?.shares.get(call.callId))
        : await EFFECT_STRATEGIES[call.policy.effect].run({ taskId, call, allowedTools, approvals, resolutions });
  const event: ToolEvent = {
    callId: call.callId,
    step,
    tool: call.tool,
    effect: call.policy?.effect ?? 'unknown',
    status: outcome.result.status,
    code: outcome.result.code,
    executions: outcome.executions,
    durationMs: Date.now() - startedAt,
    originalSize: outcome.originalSize,
    truncated: outcome.truncated,
    ...(outcome.edit ? { edit: outcome.edit } : {}),
    ...(outcome.approval ? { approval: outcome.approval } : {}),
    ...(outcome.repeatOf ? { repeatOf: outcome.repeatOf } : {}),
    ...(outcome.delegate ? { delegate: outcome.delegate } : {}),
  };
  return { call, outcome, event };
}

/**
 * A call's result as later model steps are sent it: the reference its activity made when it kept
 * the result, unless the result changed since (then whole).
 */
function asSent(call: CheckedToolCall, outcome: BoundaryResult): StepMessage {
  const { kept, result } = outcome;
  const sent = kept && kept.chars === JSON.stringify(result).length ? kept : undefined;
  return sent
    ? { role: 'tool', callId: call.callId, tool: call.tool, result: sent }
    : { role: 'tool', callId: call.callId, tool: call.tool, result };
}

/**
 * The tool phase of one step: every call the model asked for passes the boundary by its effect's
 * strategy (reads of one step concurrently, writes one after another in the model's order), leaves
 * its event and gives the model its result; past the error budget the turn ends.
 */
export async function toolPhase(run: TurnRun, step: number, calls: CheckedToolCall[]): Promise<void> {
  run.state.phase = 'tools';
  shareOutDelegation(run, step, calls);
  const reads = calls.map((call) => (runsConcurrently(call) ? executeCall(run, step, call) : undefined));
  const executed: Executed[] = [];
  for (const [index, call] of calls.entries()) executed.push(await (reads[index] ?? executeCall(run, step, call)));
  for (const { call, outcome, event } of executed) {
    run.events.push(event);
    run.messages.push(asSent(call, outcome));
    if (event.status === 'error') run.errors++;
  }
  run.decisions.publish();
  // A handoff the step accepted: the next step runs as that agent.
  if (!run.status) await applyHandoff(run);
  if (run.errors > run.settings.limits.errorBudget && !run.status) run.status = 'error_budget_exhausted';
}
