import { RetryState } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import { ACTIVITY_GRACE_MS } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { NON_RETRYABLE_CODES } from '../../common/codes';
import type { Activities } from '../../common/activity-types';
import { executionsFromDetails, failureCode } from './activity-results';
import { runToolInput, type EffectStrategy } from './effect-strategy';

/**
 * `read`: Temporal retries transient failures and timeouts up to the tool's maxAttempts; a failure
 * left after the last attempt becomes a result the model sees.
 */
export const readStrategy: EffectStrategy = {
  async run({ taskId, call, allowedTools }) {
    const { policy } = call;
    const { runTool } = proxyActivities<Activities>({
      startToCloseTimeout: policy.timeoutMs + ACTIVITY_GRACE_MS,
      ...(policy.heartbeatTimeoutMs !== undefined ? { heartbeatTimeout: policy.heartbeatTimeoutMs } : {}),
      summary: call.summary ?? call.tool,
      retry: {
        maximumAttempts: policy.maxAttempts,
        initialInterval: policy.retry.initialIntervalMs,
        backoffCoefficient: policy.retry.backoffCoefficient,
        maximumInterval: policy.retry.maximumIntervalMs,
        nonRetryableErrorTypes: [...NON_RETRYABLE_CODES],
      },
    });
    try {
      return await runTool(runToolInput({ taskId, call, allowedTools }));
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const exhausted = error.retryState === RetryState.MAXIMUM_ATTEMPTS_REACHED;
      const executions = (fallback: number) => (exhausted ? policy.maxAttempts : fallback);
      const cause = error.cause;
      if (cause instanceof ApplicationFailure) {
        const code = failureCode(cause.type);
        return BoundaryResults.failure(code, cause.message, { executions: executions(executionsFromDetails(cause.details) ?? 1) });
      }
      if (cause instanceof TimeoutFailure) {
        return BoundaryResults.failure('transient_failure', `${call.tool} timed out (${cause.timeoutType ?? 'timeout'})`, {
          executions: executions(1),
        });
      }
      return BoundaryResults.failure('tool_failure', cause?.message ?? error.message, { executions: executions(1) });
    }
  },
};
