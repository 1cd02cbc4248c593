import { ActivityFailure, ApplicationFailure, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../common/activity-types';
import { narrowTools } from '../common/contract/agent';
import {
  AWAITING_APPROVAL_SEARCH_ATTRIBUTE,
  ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE,
  TASK_ID_SEARCH_ATTRIBUTE,
} from '../common/search-attributes';
import type { AgentTurnInput, AgentTurnResult } from '../common/contract/turn';
import type { TurnStatus } from '../common/codes';
import { TurnDecisions } from './decisions/turn-decisions';
import { waitNotifier } from './decisions/wait-notifier';
import { historyReached } from './turn/history-limits';
import { checkInput } from './turn/input';
import { modelPhase } from './turn/model-phase';
import { settingsFor, tokenBudgetOf } from './turn/settings';
import { toolPhase } from './turn/tool-phase';
import { startingState, type TurnRun } from './turn/turn-run';
import { takeTurnMessages } from './turn-messages';
import { TurnTelemetry } from './turn-telemetry';

export { wouldPassTokenBudget } from './turn/model-phase';

/**
 * One agent turn: model steps and the tool calls they ask for, until a final answer or a limit.
 * Every tool call passes the boundary; refused calls never run, and every call leaves a ToolEvent.
 */
export async function agentTurn(input: AgentTurnInput): Promise<AgentTurnResult> {
  checkInput(input);
  const telemetry = new TurnTelemetry();
  return telemetry.turnSpan({ taskId: input.taskId, agent: input.agent }, () => runTurn(input, telemetry));
}

const { agentInstructions } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  summary: 'agent instructions',
  retry: { maximumAttempts: 3, initialInterval: '1 second' },
});

/** The turn as a loop of phases: its decisions and settings, then per step the model phase and the tool phase. */
async function runTurn(input: AgentTurnInput, telemetry: TurnTelemetry): Promise<AgentTurnResult> {
  const run = await startRun(input, telemetry);
  if (run.settings.agent?.instructions === 'function') await instructAgent(run);
  for (let step = 0; step < run.settings.limits.maxSteps && !run.status; step++) {
    const reply = await modelPhase(run, step);
    if (reply === 'same_step') step--;
    if (typeof reply === 'object') await toolPhase(run, step, reply.calls);
  }
  return finish(run);
}

/**
 * A turn's start: its task id listed, its state, the decisions it takes by message (their handlers
 * set before anything is awaited), its settings, and the first messages.
 */
async function startRun(input: AgentTurnInput, telemetry: TurnTelemetry): Promise<TurnRun> {
  const { taskId } = input;
  // TollgateClient sets both search attributes at the start, so such a turn records no upsert; a
  // turn started by another client (the Temporal CLI, another SDK) sets the task id here.
  const started = workflowInfo().typedSearchAttributes;
  const listed = [];
  if (started.get(TASK_ID_SEARCH_ATTRIBUTE) !== taskId || started.get(AWAITING_APPROVAL_SEARCH_ATTRIBUTE) === undefined) {
    listed.push({ key: TASK_ID_SEARCH_ATTRIBUTE, value: taskId });
  }
  // A subagent's turn names its root, so the Web UI's list shows a tree's waits from the root (in the same upsert).
  const root = input.lineage?.rootWorkflowId;
  if (root !== undefined && started.get(ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE) !== root) {
    listed.push({ key: ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE, value: root });
  }
  if (listed.length > 0) upsertSearchAttributes(listed);
  const state = startingState(taskId);
  const decisions = new TurnDecisions(state, telemetry, input.lineage);
  takeTurnMessages(state, decisions);

  const settings = await settingsFor({
    limits: input.limits,
    agent: input.agent,
    lowerOnly: input.lineage !== undefined,
    above: input.lineage?.path.slice(0, -1) ?? [],
  });
  const { agent } = settings;
  // The agent's tools narrow the turn's list: the model step, the approval's check of an edit and runTool all take this one.
  const allowedTools = narrowTools(input.tools, agent?.tools);
  if (agent) state.agent = { name: agent.name, digest: agent.digest };
  if (agent) telemetry.agent = agent.name;
  const { limits, outcomes } = settings;
  const { requireDigest, signing, groups, aboveGroups, policies } = settings;
  Object.assign(decisions.record, { requireDigest, signing, groups, aboveGroups, policies });
  if (settings.notify) decisions.record.notices = waitNotifier(state, settings.notify, decisions.record);
  if (settings.standIns) decisions.record.standIns = settings.standIns;
  Object.assign(decisions.approvals, { allowedTools, historyFull: () => historyReached(limits) });
  Object.assign(decisions.resolutions, { mode: outcomes.onUnknown, timeoutMs: outcomes.resolveTimeoutMs });
  telemetry.metrics = settings.metrics;
  const budget = tokenBudgetOf(limits, input.tokenAllowance);
  if (budget !== undefined) state.tokenBudget = budget;
  const messages: TurnRun['messages'] = [...(input.history ?? []), { role: 'user', content: input.prompt }];
  return {
    input,
    settings,
    state,
    events: state.toolCalls,
    usage: state.usage,
    decisions,
    telemetry,
    messages,
    budget,
    lastInputTokens: 0,
    errors: 0,
    startedAt: Date.now(),
    outputRetries: 0,
    ...(allowedTools ? { allowedTools } : {}),
    ...(agent ? { agent: { name: agent.name, digest: agent.digest } } : {}),
  };
}

/**
 * Runs the agent's instructions function once, in an activity: its text is recorded in the history
 * (a replay reads it there) and sent with each model step. When it fails, the turn ends `model_failed`.
 */
async function instructAgent(run: TurnRun): Promise<void> {
  const { agent, input } = run;
  if (!agent) return;
  try {
    agent.instructions = await agentInstructions({ agent: { name: agent.name, digest: agent.digest }, input });
  } catch (failure) {
    const cause = failure instanceof ActivityFailure ? failure.cause : undefined;
    const type = cause instanceof ApplicationFailure && cause.type ? cause.type : 'model_error';
    Object.assign(run, {
      status: 'model_failed',
      error: { type, message: `the instructions of agent ${agent.name}: ${cause?.message ?? String(failure)}` },
    });
  }
}

/** A turn's end: its state final and shown, and its result. */
function finish(run: TurnRun): AgentTurnResult {
  const { state, error, partialText, budget } = run;
  const status: TurnStatus = run.status ?? 'step_limit';
  state.status = status;
  state.phase = 'finished';
  run.decisions.publish();
  return {
    taskId: state.taskId,
    status,
    ...(error ? { error } : {}),
    ...(partialText !== undefined ? { partialText } : {}),
    modelInterruptions: state.modelInterruptions,
    answer: run.answer,
    ...(run.agent ? { agent: { name: run.agent.name, digest: run.agent.digest } } : {}),
    ...(run.output !== undefined ? { output: run.output } : {}),
    steps: state.step + 1,
    toolCalls: run.events,
    usage: run.usage,
    ...(budget !== undefined ? { tokenBudget: budget } : {}),
    ...(state.handoffs ? { handoffs: state.handoffs } : {}),
  };
}
