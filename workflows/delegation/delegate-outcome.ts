import { CancelledFailure, ChildWorkflowFailure, TerminatedFailure, TimeoutFailure } from '@temporalio/workflow';
import type { BoundaryResult } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { ToolEffect } from '../../common/codes';
import type { DelegateStatus } from '../../common/contract/tools';
import type { AgentTurnResult } from '../../common/contract/turn';
import { TOOL_DEFAULTS } from '../../common/defaults';
import { EFFECT_TRAITS } from '../../common/effects';

/** How much of a child's answer a failure's message quotes. */
const ANSWER_QUOTED_CHARS = 500;

/** A delegate call's result for the parent, and how its child ended. */
export interface DelegateOutcome {
  outcome: BoundaryResult;
  status: DelegateStatus;
}

/** The handler executions of a child's calls, its own subagents' included (each delegate call's event sums its child's). */
function executionsOf(result: AgentTurnResult): number {
  return result.toolCalls.reduce((sum, event) => sum + event.executions, 0);
}

function quoted(answer: string | undefined): string {
  if (!answer) return '';
  return `; its last answer: ${answer.length > ANSWER_QUOTED_CHARS ? `${answer.slice(0, ANSWER_QUOTED_CHARS)}…` : answer}`;
}

/**
 * What a child turn that returned gives its parent's call: a completed child's typed output (else its
 * answer text) as the result; a child with a call whose outcome stayed unknown makes the call
 * `outcome_unknown` (never retried); a child that ended on a limit or a failure is a `tool_failure`
 * naming how it ended.
 */
export function outcomeOfChild(agent: string, result: AgentTurnResult): DelegateOutcome {
  const executions = executionsOf(result);
  const unknown = result.toolCalls.filter((event) => event.code === 'outcome_unknown');
  if (unknown.length > 0) {
    const calls = unknown.map((event) => `${event.tool} (${event.callId})`).join(', ');
    const message = `agent ${agent} ended ${result.status} with the outcome of ${calls} unknown: it may or may not have taken effect${quoted(result.answer)}`;
    return { outcome: BoundaryResults.outcomeUnknown(message, executions), status: result.status };
  }
  if (result.status !== 'completed') {
    const message = `agent ${agent} ended ${result.status} after ${result.steps} steps${result.error ? ` (${result.error.message})` : ''}${quoted(result.answer)}`;
    return { outcome: BoundaryResults.failure('tool_failure', message, { executions, retryable: false }), status: result.status };
  }
  if (result.output !== undefined) {
    const size = JSON.stringify(result.output).length;
    return {
      outcome: BoundaryResults.of({ status: 'success', data: result.output }, { executions, originalSize: size }),
      status: 'completed',
    };
  }
  const answer = result.answer ?? '';
  const limit = TOOL_DEFAULTS.maxOutputChars;
  const data = answer.length > limit ? answer.slice(0, limit) : answer;
  return {
    outcome: BoundaryResults.of({ status: 'success', data }, { executions, originalSize: answer.length, truncated: answer.length > limit }),
    status: 'completed',
  };
}

/** How a child workflow that did not return ended. */
function statusOfFailure(error: unknown): DelegateStatus {
  const cause = error instanceof ChildWorkflowFailure ? error.cause : error;
  if (cause instanceof CancelledFailure) return 'cancelled';
  if (cause instanceof TerminatedFailure) return 'terminated';
  if (cause instanceof TimeoutFailure) return 'timed_out';
  return 'failed';
}

/**
 * What a child workflow that failed, was terminated or cancelled (or could not start) gives its
 * parent's call: a child that could write may have done so, so the call is `outcome_unknown`, never
 * retried; a read-only child's failure is a `tool_failure`.
 */
export function outcomeOfFailure(agent: string, effect: ToolEffect, error: unknown): DelegateOutcome {
  const status = statusOfFailure(error);
  const cause = error instanceof ChildWorkflowFailure && error.cause ? error.cause.message : (error as Error)?.message;
  const message = `agent ${agent}'s turn ${status}${cause ? `: ${cause}` : ''}`;
  // Only a child whose tools are all safe to run again (reads) failed harmlessly.
  if (EFFECT_TRAITS[effect].retry === 'bounded')
    return { outcome: BoundaryResults.failure('tool_failure', message, { retryable: false }), status };
  // Executions are not known: the child's events did not come back.
  return { outcome: BoundaryResults.outcomeUnknown(`${message}; its writes may or may not have taken effect`, 0), status };
}
