import type { CheckedToolCall } from '../../common/activity-types';
import type { TurnLimits } from '../../common/contract/turn';
import type { TurnRun } from '../turn/turn-run';

/** What one delegate call's child turn gets: its limits and token allowance, or why there is nothing left to give. */
export type ChildShare = { limits: TurnLimits; tokenAllowance?: number } | { refused: string };

/** What a turn's children used so far, counted against the turn's own limits. */
export interface DelegatedUsage {
  steps: number;
  toolCalls: number;
  /** Child turns running now (at most `limits.maxConcurrentSubagents`). */
  running: number;
  /** The shares of the delegate calls of the step under way, by call id. */
  shares: Map<string, ChildShare>;
}

/** The children's usage of a turn, started at nothing on its first delegate call. */
export function delegatedUsage(run: TurnRun): DelegatedUsage {
  run.delegated ??= { steps: 0, toolCalls: 0, running: 0, shares: new Map() };
  return run.delegated;
}

/** Shares out what the turn has left between the step's delegate calls, before any of them starts. */
export function shareOutDelegation(run: TurnRun, step: number, calls: CheckedToolCall[]): void {
  if (calls.some((call) => call.delegate)) delegatedUsage(run).shares = childShares(run, step, calls);
}

/**
 * Each delegate call's share of what the turn has left, as the step's calls start: steps (one kept
 * for the turn to read the answers), tool calls, error budget and tokens split evenly between the
 * step's delegate calls, and the time to the turn's deadline. The child's own limits (its agent's,
 * the config's) still bound it: a child turn's limits only lower them.
 */
export function childShares(run: TurnRun, step: number, calls: CheckedToolCall[]): Map<string, ChildShare> {
  const delegates = calls.filter((call) => call.delegate && !call.refusal);
  const shares = new Map<string, ChildShare>();
  if (delegates.length === 0) return shares;
  const { limits } = run.settings;
  const used = delegatedUsage(run);
  const count = delegates.length;
  const steps = Math.floor((limits.maxSteps - (step + 1) - used.steps - 1) / count);
  const toolCalls = Math.floor((limits.maxToolCalls - run.events.length - calls.length - used.toolCalls) / count);
  const errorBudget = Math.max(0, Math.floor((limits.errorBudget - run.errors) / count));
  const deadlineMs = limits.deadlineMs - (Date.now() - run.startedAt);
  const tokensLeft = run.budget === undefined ? undefined : run.budget - run.usage.inputTokens - run.usage.outputTokens;
  const tokenAllowance = tokensLeft === undefined ? undefined : Math.floor(tokensLeft / count);
  const short = [
    steps < 1 ? `${Math.max(0, steps)} steps` : '',
    toolCalls < 1 ? `${Math.max(0, toolCalls)} tool calls` : '',
    deadlineMs < 1 ? 'no time before the deadline' : '',
    tokenAllowance !== undefined && tokenAllowance < 1 ? 'no tokens' : '',
  ].filter(Boolean);
  for (const call of delegates) {
    if (short.length > 0) {
      shares.set(call.callId, {
        refused: `agent ${call.delegate!.agent} would get ${short.join(', ')} of this turn's remaining limits (shared by ${count} delegate calls); delegation refused`,
      });
      continue;
    }
    const share: TurnLimits = { maxSteps: steps, maxToolCalls: toolCalls, errorBudget, deadlineMs };
    // Delegation's own bounds go down the tree as they are: the root's depth bound holds at every level.
    for (const key of ['maxDepth', 'maxConcurrentSubagents', 'maxHandoffs'] as const) {
      if (limits[key] !== undefined) share[key] = limits[key];
    }
    shares.set(call.callId, { limits: share, ...(tokenAllowance !== undefined ? { tokenAllowance } : {}) });
  }
  return shares;
}
