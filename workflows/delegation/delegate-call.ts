import { CancellationScope, condition, isCancellation, startChild, workflowInfo } from '@temporalio/workflow';
import type { BoundaryResult, CheckedToolCall } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { AgentTurnInput, AgentTurnResult } from '../../common/contract/turn';
import { AGENT_TURN_WORKFLOW_TYPE, DEFAULT_TURN_LIMITS } from '../../common/defaults';
import type { agentTurn } from '../agent-turn';
import type { TurnRun } from '../turn/turn-run';
import { delegatedUsage, type ChildShare, type DelegatedUsage } from './child-limits';
import { outcomeOfChild, outcomeOfFailure, type DelegateOutcome } from './delegate-outcome';
import { childLineage, delegationRefusal } from './lineage';
import { childSummaryOf } from './child-summary';

/** The workflow id of the child turn a delegate call starts: the parent's and the call's, so a start tried again finds the one child. */
export function childWorkflowId(parentWorkflowId: string, callId: string): string {
  return `${parentWorkflowId}-call-${callId}`;
}

/**
 * Runs one delegate call: refused (`delegation_refused`) past the depth bound, on a cycle or with no
 * budget left to share; else the subagent runs as a child `agentTurn` on the parent's task queue,
 * under the root's task id (write intents are keyed by it), within its share of the parent's limits
 * and at most `maxConcurrentSubagents` at once. What the child used counts against the parent's
 * limits. Cancelling the parent cancels the child; a parent that closes terminates it.
 */
export async function runDelegateCall(run: TurnRun, call: CheckedToolCall, share: ChildShare | undefined): Promise<BoundaryResult> {
  const { agent, request } = call.delegate!;
  const { workflowId, taskQueue } = workflowInfo();
  const childId = childWorkflowId(workflowId, call.callId);
  const refusal = delegationRefusal(run, agent) ?? (share && 'refused' in share ? share.refused : undefined);
  if (refusal || !share || 'refused' in share) {
    return refusedCall(agent, childId, refusal ?? `agent ${agent}: no share of the turn's limits; delegation refused`);
  }
  const used = delegatedUsage(run);
  const cap = run.settings.limits.maxConcurrentSubagents ?? DEFAULT_TURN_LIMITS.maxConcurrentSubagents;
  await takeSlot(used, cap);
  // A child that waited for a slot gets only the time left now before the parent's deadline.
  const timeLeft = run.settings.limits.deadlineMs - (Date.now() - run.startedAt);
  if (timeLeft < 1) {
    used.running--;
    return refusedCall(agent, childId, `agent ${agent}: no time left before this turn's deadline; delegation refused`);
  }
  let ended: DelegateOutcome;
  try {
    const input: AgentTurnInput = {
      taskId: run.input.taskId,
      prompt: request,
      agent,
      ...(run.input.tools ? { tools: run.input.tools } : {}),
      limits: { ...share.limits, deadlineMs: Math.min(share.limits.deadlineMs ?? timeLeft, timeLeft) },
      ...(share.tokenAllowance !== undefined ? { tokenAllowance: share.tokenAllowance } : {}),
      lineage: childLineage({ run, workflowId, callId: call.callId, agent, request }),
    };
    const result = await childTurn(childId, taskQueue, input);
    countAgainstParent(run, result);
    ended = outcomeOfChild(agent, result);
  } catch (error) {
    // The parent itself cancelled: its turn ends cancelled, as any turn does (the child was cancelled with it).
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    ended = outcomeOfFailure(agent, call.policy!.effect, error);
  } finally {
    used.running--;
    // Whatever its end, nothing of the child waits any more: its waits leave this turn's list (and its parent's).
    run.decisions.below.childEnded(childId);
  }
  return { ...ended.outcome, delegate: { agent, workflowId: childId, status: ended.status } };
}

/** A delegate call refused before its child started: `delegation_refused`, nothing run. */
function refusedCall(agent: string, workflowId: string, message: string): BoundaryResult {
  return { ...BoundaryResults.refused('delegation_refused', message), delegate: { agent, workflowId, status: 'refused' } };
}

/**
 * Takes one of the turn's `cap` child slots, waiting for one to free. The slot is taken in the same
 * check that finds it free: calls of one step woken together cannot all take the last one.
 */
async function takeSlot(used: DelegatedUsage, cap: number): Promise<void> {
  const take = () => {
    if (used.running >= cap) return false;
    used.running++;
    return true;
  };
  if (!take()) await condition(take);
}

/** Starts the child turn and waits for its result. */
async function childTurn(childId: string, taskQueue: string, input: AgentTurnInput): Promise<AgentTurnResult> {
  const handle = await startChild<typeof agentTurn>(AGENT_TURN_WORKFLOW_TYPE, {
    workflowId: childId,
    taskQueue,
    args: [input],
    // A closed id is never started again: a parent reset or replayed cannot run the subagent a second time.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    // Cancelling the parent cancels the child and waits until it ended, so its waits are withdrawn first.
    cancellationType: 'WAIT_CANCELLATION_COMPLETED',
    // A parent that closes any other way (terminated, timed out) leaves no child running.
    parentClosePolicy: 'TERMINATE',
    // The Web UI names the agent and the request that led there (the request's hidden characters marked).
    ...childSummaryOf(input),
  });
  return handle.result();
}

/** What a child used goes on the parent's account: its tokens, steps, tool calls and failed calls. */
function countAgainstParent(run: TurnRun, result: AgentTurnResult): void {
  const used = delegatedUsage(run);
  used.steps += result.steps;
  used.toolCalls += result.toolCalls.length;
  run.usage.inputTokens += result.usage.inputTokens;
  run.usage.outputTokens += result.usage.outputTokens;
  run.errors += result.toolCalls.filter((event) => event.status === 'error').length;
}
