// One constructor for each kind of result the boundary produces; pure, so workflows use it too.
import type { ErrorCode } from './codes';
import { isRetried } from './failures';
import type { BoundaryResult } from './activity-types';
import type { ToolResult } from './contract/tools';

/** Builds the boundary's results; nothing else writes their literals. */
export const BoundaryResults = {
  /** A result as the boundary normalized it. */
  of(
    result: ToolResult,
    { executions, originalSize = 0, truncated = false }: { executions: number; originalSize?: number; truncated?: boolean },
  ): BoundaryResult {
    return { result, executions, originalSize, truncated };
  },
  /** A failure with a stable code; `retryable` tells the model whether trying again may help. */
  failure(
    code: ErrorCode,
    message: string,
    { executions = 0, retryable = isRetried(code) }: { executions?: number; retryable?: boolean } = {},
  ): BoundaryResult {
    return { result: { status: 'error', code, retryable, message }, executions, originalSize: 0, truncated: false };
  },
  /** A call the boundary refused before anything ran. */
  refused(code: ErrorCode, message: string): BoundaryResult {
    return BoundaryResults.failure(code, message, { retryable: false });
  },
  /** A write that may or may not have taken effect; never retried by itself. */
  outcomeUnknown(message: string, executions: number): BoundaryResult {
    return BoundaryResults.failure('outcome_unknown', message, { executions, retryable: false });
  },
  /** A call that did not run and changed nothing (0 executions); the model may make it again. */
  notRun(message: string): BoundaryResult {
    return BoundaryResults.failure('not_run', message, { executions: 0, retryable: false });
  },
  /** A person said no; its own status, spending no error budget. */
  denied(message: string): BoundaryResult {
    return { result: { status: 'denied', code: 'denied', retryable: false, message }, executions: 0, originalSize: 0, truncated: false };
  },
  /** An intent already applied, answered from its receipt without running the handler. */
  fromReceipt(receipt: ToolResult, executions: number): BoundaryResult {
    return { result: receipt, executions, originalSize: 0, truncated: false };
  },
};
