import { ActivityFailure, ApplicationFailure, condition, patched, proxyActivities, proxyLocalActivities, sleep, TimeoutFailure } from '@temporalio/workflow';
import type { LocalActivityOptions } from '@temporalio/common';
import type { Activities } from '../activities';
import type { CheckedToolCall, ToolPolicy, ToolResult } from '../common/types';
import type { ApprovalBook } from './approval-book';
import { ACTIVITY_GRACE_MS, type ExecutedCall } from './run-read-tool';

/**
 * Turns recorded before this patch ran the status lookup as a regular activity; every turn since
 * runs it as a local activity (in the worker that runs the workflow task: one marker event and no
 * extra round trip through the server). Both paths stay so that older histories still replay.
 */
export const STATUS_LOOKUP_LOCAL_PATCH = 'status-lookup-local-activity';

/** The status lookup of one call: it only reads, so it may be retried freely. */
function lookupActivity(call: CheckedToolCall) {
  const options: LocalActivityOptions = {
    startToCloseTimeout: '30 seconds',
    summary: `status of ${call.summary ?? call.tool}`,
    retry: { maximumAttempts: 3, initialInterval: '200 ms', nonRetryableErrorTypes: ['invalid_arguments'] },
  };
  return patched(STATUS_LOOKUP_LOCAL_PATCH) ? proxyLocalActivities<Activities>(options).lookupStatus : proxyActivities<Activities>(options).lookupStatus;
}

/** The write activity: exactly one attempt; whatever cut it off is decided here, never by a retry. */
function writeActivity(call: CheckedToolCall, policy: ToolPolicy) {
  return proxyActivities<Activities>({
    startToCloseTimeout: policy.timeoutMs + ACTIVITY_GRACE_MS,
    summary: call.summary ?? call.tool,
    retry: { maximumAttempts: 1 },
  }).runTool;
}

/** A write that was cut off (timeout, reset, lost worker): it may or may not have taken effect. */
function interruption(error: unknown): string {
  if (!(error instanceof ActivityFailure)) throw error;
  const cause = error.cause;
  if (cause instanceof TimeoutFailure) return `the call timed out (${cause.timeoutType ?? 'timeout'})`;
  if (cause instanceof ApplicationFailure) return cause.message;
  return cause?.message ?? error.message;
}

function outcomeUnknown(message: string, attempts: number): ExecutedCall {
  return { result: { status: 'error', code: 'outcome_unknown', retryable: false, message }, attempts, originalSize: 0, truncated: false };
}

function fromReceipt(receipt: ToolResult, attempts: number): ExecutedCall {
  return { result: receipt, attempts, originalSize: 0, truncated: false };
}

/**
 * Runs a `reversible_write`: a status lookup before every execution; applied → success from the
 * receipt, the handler not called; not applied → one execution; cut off → look up again; cannot
 * tell → `outcome_unknown`. At most the tool's maxAttempts executions.
 */
export async function runReversibleWrite({ taskId, call, policy, allowedTools }: { taskId: string; call: CheckedToolCall; policy: ToolPolicy; allowedTools?: string[] }): Promise<ExecutedCall> {
  const runTool = writeActivity(call, policy);
  const lookupStatus = lookupActivity(call);
  let executions = 0;
  let lastProblem = 'not attempted';
  for (let round = 0; ; round++) {
    const status = await lookupStatus({ taskId, callId: call.callId, tool: call.tool, args: call.args });
    if (status.state === 'applied') return fromReceipt(status.receipt, executions);
    if (status.state === 'unknown') return outcomeUnknown(`${call.tool}: ${status.reason}`, executions);
    if (executions >= policy.maxAttempts) {
      return { result: { status: 'error', code: 'transient_failure', retryable: true, message: `${call.tool} did not complete in ${executions} attempts: ${lastProblem}` }, attempts: executions, originalSize: 0, truncated: false };
    }
    if (round > 0) {
      const backoff = Math.min(policy.retry.initialIntervalMs * policy.retry.backoffCoefficient ** (round - 1), policy.retry.maximumIntervalMs);
      await sleep(backoff);
    }
    try {
      const { attempt, originalSize, truncated, ...result } = await runTool({ taskId, callId: call.callId, tool: call.tool, args: call.args, allowedTools, definitionDigest: policy.definitionDigest });
      executions += attempt > 0 ? 1 : 0;
      if (result.status === 'error' && result.retryable) {
        lastProblem = result.message ?? result.code ?? 'error';
        continue;
      }
      return { result, attempts: executions, originalSize, truncated };
    } catch (error) {
      executions += 1;
      lastProblem = interruption(error);
    }
  }
}

/**
 * Runs an `irreversible_write`: waits for a human decision under a durable timer, then executes
 * exactly once. Denied → `denied`; no answer in time → `approval_expired`; cut off → `outcome_unknown`.
 */
export async function runIrreversibleWrite({
  taskId,
  call,
  policy,
  allowedTools,
  approvals,
}: {
  taskId: string;
  call: CheckedToolCall;
  policy: ToolPolicy;
  allowedTools?: string[];
  approvals: ApprovalBook;
}): Promise<ExecutedCall> {
  const requestedAt = Date.now();
  approvals.open({
    callId: call.callId,
    tool: call.tool,
    args: call.args,
    argsDigest: call.argsDigest,
    requestedAt: new Date(requestedAt).toISOString(),
    expiresAt: new Date(requestedAt + policy.approvalTimeoutMs).toISOString(),
  });
  const decided = await condition(() => approvals.decisionFor(call.callId) !== undefined, policy.approvalTimeoutMs, { summary: `approval of ${call.callId}: ${call.summary ?? call.tool}` });
  approvals.close(call.callId);
  if (!decided) {
    return { result: { status: 'error', code: 'approval_expired', retryable: false, message: `nobody decided on ${call.tool} within ${policy.approvalTimeoutMs / 1000} s` }, attempts: 0, originalSize: 0, truncated: false };
  }
  const decision = approvals.decisionFor(call.callId)!;
  if (decision.decision === 'deny') {
    const by = decision.approver ? ` by ${decision.approver}` : '';
    return { result: { status: 'denied', code: 'denied', retryable: false, message: `denied${by}${decision.reason ? `: ${decision.reason}` : ''}` }, attempts: 0, originalSize: 0, truncated: false };
  }
  const runTool = writeActivity(call, policy);
  try {
    const { attempt, originalSize, truncated, ...result } = await runTool({ taskId, callId: call.callId, tool: call.tool, args: call.args, allowedTools, definitionDigest: policy.definitionDigest });
    return { result, attempts: attempt > 0 ? 1 : 0, originalSize, truncated };
  } catch (error) {
    return outcomeUnknown(`${call.tool} was cut off and is not run again: ${interruption(error)}`, 1);
  }
}
