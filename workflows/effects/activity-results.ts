import { TimeoutType } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import type { BoundaryResult } from '../../common/activity-types';
import { ERROR_CODES, type ErrorCode } from '../../common/codes';

/** How often the handler ran, from the details of a failure `runTool` threw (a BoundaryResult). */
export function executionsFromDetails(details: unknown): number | undefined {
  return (details as Array<Partial<BoundaryResult>> | undefined)?.[0]?.executions;
}

/** A stable code for a failure type, `tool_failure` for anything unknown. */
export function failureCode(type: string | undefined | null): ErrorCode {
  return ERROR_CODES.includes(type as ErrorCode) ? (type as ErrorCode) : 'tool_failure';
}

/** Whether a write activity timed out before any worker started it: nothing ran. */
export function neverStarted(error: unknown): boolean {
  return (
    error instanceof ActivityFailure && error.cause instanceof TimeoutFailure && error.cause.timeoutType === TimeoutType.SCHEDULE_TO_START
  );
}

/** What cut a write off (timeout, reset, lost worker): it may or may not have taken effect. Anything that is not an activity failure is rethrown. */
export function interruption(error: unknown): string {
  if (!(error instanceof ActivityFailure)) throw error;
  const cause = error.cause;
  if (cause instanceof TimeoutFailure) return `the call timed out (${cause.timeoutType ?? 'timeout'})`;
  if (cause instanceof ApplicationFailure) return cause.message;
  return cause?.message ?? error.message;
}
