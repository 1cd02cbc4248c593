import { RetryState } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities, TimeoutFailure } from '@temporalio/workflow';
import { ACTIVITY_GRACE_MS } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { NON_RETRYABLE_CODES } from '../../common/codes';
import type { Activities } from '../../common/activity-types';
import { executionsFromDetails, failureCode } from './activity-results';
import { runToolInput, type EffectContext, type EffectStrategy } from './effect-strategy';
import { approvalGate } from './approval-gate';
import { EFFECT_TRAITS } from '../../common/effects';
import type { BoundaryResult } from '../../common/activity-types';
import { activitySummary } from './activity-summary';

/**
 * `read`: Temporal retries transient failures and timeouts up to the tool's maxAttempts; a failure
 * left after the last attempt becomes a result the model sees. A read the worker's policy marks
 * `local` runs as a local activity under the same timeout, attempts and backoff.
 */
async function runRead({ taskId, call, allowedTools }: EffectContext): Promise<BoundaryResult> {
  const { policy } = call;
  const retry = {
    maximumAttempts: policy.maxAttempts,
    initialInterval: policy.retry.initialIntervalMs,
    backoffCoefficient: policy.retry.backoffCoefficient,
    maximumInterval: policy.retry.maximumIntervalMs,
    nonRetryableErrorTypes: [...NON_RETRYABLE_CODES],
  };
  const startToCloseTimeout = policy.timeoutMs + ACTIVITY_GRACE_MS;
  const summary = activitySummary(call);
  const { runTool } = policy.local
    ? proxyLocalActivities<Activities>({ startToCloseTimeout, summary, retry })
    : proxyActivities<Activities>({
        startToCloseTimeout,
        ...(policy.heartbeatTimeoutMs !== undefined ? { heartbeatTimeout: policy.heartbeatTimeoutMs } : {}),
        summary,
        retry,
      });
  try {
    return await runTool(runToolInput({ taskId, call, allowedTools }));
  } catch (error) {
    // A local activity's last failure reaches the workflow as the failure itself, not wrapped in an ActivityFailure.
    const unwrapped = policy.local && (error instanceof ApplicationFailure || error instanceof TimeoutFailure);
    if (!(error instanceof ActivityFailure) && !unwrapped) throw error;
    const exhausted = error instanceof ActivityFailure && error.retryState === RetryState.MAXIMUM_ATTEMPTS_REACHED;
    const executions = (fallback: number) => (exhausted ? policy.maxAttempts : fallback);
    const cause = error instanceof ActivityFailure ? error.cause : error;
    if (cause instanceof ApplicationFailure) {
      const code = failureCode(cause.type);
      return BoundaryResults.failure(code, cause.message, { executions: executions(executionsFromDetails(cause.details) ?? 1) });
    }
    if (cause instanceof TimeoutFailure) {
      // Timeouts are retried: one that ends a local read ended its last attempt.
      return BoundaryResults.failure('transient_failure', `${call.tool} timed out (${cause.timeoutType ?? 'timeout'})`, {
        executions: unwrapped ? policy.maxAttempts : executions(1),
      });
    }
    return BoundaryResults.failure('tool_failure', cause?.message ?? (error as Error).message, { executions: executions(1) });
  }
}

/**
 * `read`, and a read that needs approval (its `needsApproval`): it waits for a decision first, as a
 * write does (rules and grants, then a person); denied or unanswered, it runs 0 times.
 */
export const readStrategy: EffectStrategy = {
  async run(context) {
    if (!(context.call.needsApproval ?? EFFECT_TRAITS.read.needsApproval)) return runRead(context);
    const gate = approvalGate(context);
    const refused = await gate.pass(0);
    if (refused) return refused;
    return gate.shown(await runRead({ ...context, call: gate.runnable() }));
  },
};
