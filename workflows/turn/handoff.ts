import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities, BoundaryResult, CheckedToolCall } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { narrowTools } from '../../common/contract/agent';
import type { TurnHandoff } from '../../common/contract/turn';
import { DEFAULT_TURN_LIMITS } from '../../common/defaults';
import { FAILURE_TYPE } from '../../common/failures';
import { withAgentGroups } from './settings';
import type { TurnRun } from './turn-run';

// A handoff: the model of the turn's agent calls `transfer_to_<agent>`, and the turn's next steps run
// as that agent (its instructions, tools, model and settings, output schema, approvals). The call
// is decided at once in the tool phase (bounded by `limits.maxHandoffs`, one per step); the switch
// happens once the step's calls are done, so every call of the step runs as the agent that asked.

const { turnSettings } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  summary: 'handoff settings',
  retry: { maximumAttempts: 5 },
});

const { agentInstructions } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  summary: 'agent instructions',
  retry: { maximumAttempts: 3, initialInterval: '1 second' },
});

/** The name a turn's agent goes by in handoffs: `default` for a turn that names none. */
function agentName(run: TurnRun): string {
  return run.agent?.name ?? 'default';
}

/** The agents the turn went through, in order: `triage → billing → triage`. */
function pathOf(run: TurnRun, next?: string): string {
  const handoffs = run.state.handoffs ?? [];
  const names = [handoffs[0]?.from ?? agentName(run), ...handoffs.map((handoff) => handoff.to), ...(next ? [next] : [])];
  return names.join(' → ');
}

/**
 * A handoff call's result: accepted (the turn goes to the agent once the step's calls are done), or
 * refused `delegation_refused` past `limits.maxHandoffs` or when the step already hands the turn on.
 */
export function handoffOutcome(run: TurnRun, step: number, call: CheckedToolCall): BoundaryResult {
  const { to, reason } = call.handoff!;
  if (run.handoff) {
    return BoundaryResults.refused('delegation_refused', `one handoff per step: this step already hands the turn to ${run.handoff.to}`);
  }
  const made = run.state.handoffs?.length ?? 0;
  // A turn whose settings were recorded before the limit existed gets its default.
  const max = run.settings.limits.maxHandoffs ?? DEFAULT_TURN_LIMITS.maxHandoffs;
  if (made >= max) {
    return BoundaryResults.refused(
      'delegation_refused',
      `the turn may hand off at most ${max} times (limits.maxHandoffs); it went ${pathOf(run)} and may not go on to ${to}`,
    );
  }
  run.handoff = { from: agentName(run), to, step, ...(reason !== undefined ? { reason } : {}) };
  const data = { handedTo: to, path: pathOf(run, to) };
  return BoundaryResults.of({ status: 'success', data }, { executions: 0, originalSize: JSON.stringify(data).length });
}

/**
 * The switch to the agent a step handed the turn to: its settings as a worker declares them (the
 * `turnSettings` local activity, recorded), which must be the definition the turn's agent named at the
 * turn's start; then its tools, model, output and approvals, and its instructions function run once.
 * Another definition, or none, ends the turn `model_failed` with `agent_mismatch`.
 */
export async function applyHandoff(run: TurnRun): Promise<void> {
  const handoff = run.handoff;
  if (!handoff) return;
  delete run.handoff;
  const expected = run.settings.agent?.handoffs?.find((target) => target.name === handoff.to);
  const settings = await turnSettings({ agent: handoff.to });
  const target = settings.agent;
  if (!expected || !target || target.digest !== expected.digest) {
    const declared = target ? `differently (digest ${target.digest.slice(0, 12)})` : 'not at all';
    const started = expected ? `, the turn started with ${expected.digest.slice(0, 12)}` : '';
    run.status = 'model_failed';
    run.error = {
      type: FAILURE_TYPE.agent_mismatch,
      message: `handoff to ${handoff.to}: this worker declares agent ${handoff.to} ${declared}${started}; the turn does not go on`,
    };
    return;
  }
  const reference = { name: target.name, digest: target.digest };
  const workerGroups = settings.approvals.groups;
  const groups = target.groups ? withAgentGroups(workerGroups, target.groups) : workerGroups;
  run.settings = { ...run.settings, agent: target, groups };
  run.agent = { ...reference };
  const allowedTools = narrowTools(run.input.tools, target.tools);
  if (allowedTools) run.allowedTools = allowedTools;
  else delete run.allowedTools;
  Object.assign(run.decisions.approvals, { allowedTools });
  run.decisions.record.groups = groups;
  run.outputRetries = 0;
  const { state } = run;
  state.agent = reference;
  state.handoffs = [...(state.handoffs ?? []), handoff];
  run.telemetry.agent = target.name;
  if (target.instructions === 'function') await instructTarget(run, handoff);
  run.decisions.publish();
}

/** Runs the new agent's instructions function once (its text recorded); when it fails, the turn ends `model_failed`. */
async function instructTarget(run: TurnRun, handoff: TurnHandoff): Promise<void> {
  const agent = run.agent!;
  try {
    agent.instructions = await agentInstructions({ agent: { name: agent.name, digest: agent.digest }, input: run.input });
  } catch (failure) {
    const cause = failure instanceof ActivityFailure ? failure.cause : undefined;
    const type = cause instanceof ApplicationFailure && cause.type ? cause.type : 'model_error';
    run.status = 'model_failed';
    run.error = {
      type,
      message: `the instructions of agent ${agent.name} (handed to by ${handoff.from}): ${cause?.message ?? String(failure)}`,
    };
  }
}
