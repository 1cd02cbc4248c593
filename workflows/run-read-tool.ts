import { RetryState } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import { ERROR_CODES, NON_RETRYABLE_CODES, type ErrorCode } from '../common/codes';
import type { RunToolResult, ToolFailureDetails, ToolPolicy, ToolResult } from '../common/types';
import type { Activities } from '../activities';

/** Room the activity gets beyond the tool's own timeout, so the boundary's timer fires first. */
export const ACTIVITY_GRACE_MS = 5_000;

/** A tool call's result with what the event needs: how often the handler ran and how big its output was. */
export interface ExecutedCall {
  result: ToolResult;
  attempts: number;
  originalSize: number;
  truncated: boolean;
}

function failureCode(type: string | undefined | null): ErrorCode {
  return ERROR_CODES.includes(type as ErrorCode) ? (type as ErrorCode) : 'tool_failure';
}

/**
 * Runs a `read` tool: Temporal retries transient failures and timeouts up to the tool's
 * maxAttempts; a failure left after the last attempt becomes a result the model sees.
 */
export async function runReadTool({
  taskId,
  callId,
  tool,
  args,
  policy,
  allowedTools,
  summary,
}: {
  taskId: string;
  callId: string;
  tool: string;
  args: unknown;
  policy: ToolPolicy;
  allowedTools?: string[];
  summary?: string;
}): Promise<ExecutedCall> {
  const { runTool } = proxyActivities<Activities>({
    startToCloseTimeout: policy.timeoutMs + ACTIVITY_GRACE_MS,
    summary: summary ?? tool,
    retry: {
      maximumAttempts: policy.maxAttempts,
      initialInterval: policy.retry.initialIntervalMs,
      backoffCoefficient: policy.retry.backoffCoefficient,
      maximumInterval: policy.retry.maximumIntervalMs,
      nonRetryableErrorTypes: [...NON_RETRYABLE_CODES],
    },
  });
  try {
    const { attempt, originalSize, truncated, ...result }: RunToolResult = await runTool({ taskId, callId, tool, args, allowedTools, definitionDigest: policy.definitionDigest });
    return { result, attempts: attempt, originalSize, truncated };
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    const exhausted = error.retryState === RetryState.MAXIMUM_ATTEMPTS_REACHED;
    const cause = error.cause;
    if (cause instanceof ApplicationFailure) {
      const details = cause.details?.[0] as ToolFailureDetails | undefined;
      const code = failureCode(cause.type);
      return {
        result: { status: 'error', code, retryable: code === 'transient_failure', message: cause.message },
        attempts: exhausted ? policy.maxAttempts : (details?.attempt ?? 1),
        originalSize: 0,
        truncated: false,
      };
    }
    if (cause instanceof TimeoutFailure) {
      return {
        result: { status: 'error', code: 'transient_failure', retryable: true, message: `${tool} timed out (${cause.timeoutType ?? 'timeout'})` },
        attempts: exhausted ? policy.maxAttempts : 1,
        originalSize: 0,
        truncated: false,
      };
    }
    return {
      result: { status: 'error', code: 'tool_failure', retryable: false, message: cause?.message ?? error.message },
      attempts: exhausted ? policy.maxAttempts : 1,
      originalSize: 0,
      truncated: false,
    };
  }
}
