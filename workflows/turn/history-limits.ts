import { workflowInfo } from '@temporalio/workflow';
import type { ResolvedTurnLimits } from '../../common/contract/turn';

/**
 * Whether the turn's history has reached its limits (`limits.maxHistoryEvents`, `limits.maxHistoryBytes`).
 * The server reports the size and event count with each workflow task, so a replay sees the same
 * values. The turn checks before each model step (the step that would add the most) and ends with
 * `history_limit`; a wait for a decision ends too, so that a flood of signals (which the server
 * records whether or not they are taken) ends the turn that way instead of getting it terminated.
 * `continueAsNewSuggested` is not used: the server suggests it far below the hard limits, and a turn
 * cannot continue as new without losing its calls in flight; a conversation carries on with its next turn.
 */
export function historyReached({
  maxHistoryEvents,
  maxHistoryBytes,
}: Pick<ResolvedTurnLimits, 'maxHistoryEvents' | 'maxHistoryBytes'>): boolean {
  const { historyLength, historySize } = workflowInfo();
  return historyLength >= maxHistoryEvents || historySize >= maxHistoryBytes;
}
