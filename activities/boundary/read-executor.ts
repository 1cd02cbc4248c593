import { ApplicationFailure, Context } from '@temporalio/activity';
import type { BoundaryResult, RunToolInput } from '../../common/activity-types';
import { FAILURE_TYPE } from '../../common/failures';
import type { ToolDefinition } from '../../tools/define-tool';
import type { HandlerRun } from './run-handler';

/**
 * How the boundary runs a read: a retryable failure is thrown so that Temporal's retry policy
 * repeats it (a call that never started, too); a final failure is returned as a result the model
 * can act on.
 */
export function createReadExecutor(handler: HandlerRun) {
  return async function runRead(tool: ToolDefinition, args: unknown, input: RunToolInput): Promise<BoundaryResult> {
    const attempt = Context.current().info.attempt;
    const end = await handler.run(tool, args, input);
    if (!end.started) {
      throw ApplicationFailure.create({
        type: FAILURE_TYPE.transient_failure,
        message: handler.notStarted(tool, end.reason),
        nonRetryable: false,
        details: [{ executions: attempt - 1 }],
      });
    }
    const normalized = handler.normalize(tool, end.outcome, attempt);
    const { result } = normalized;
    if (result.status === 'error' && result.retryable) {
      // A service that said when to come back (HTTP Retry-After, capped by its source) is asked again then, not at the backoff's time.
      const retryAfterMs = end.outcome.ok ? undefined : end.outcome.retryAfterMs;
      throw ApplicationFailure.create({
        type: result.code,
        message: result.message,
        nonRetryable: false,
        details: [{ executions: attempt }],
        ...(retryAfterMs !== undefined ? { nextRetryDelay: retryAfterMs } : {}),
      });
    }
    return normalized;
  };
}
