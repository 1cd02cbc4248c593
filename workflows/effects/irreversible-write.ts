import { condition, workflowInfo } from '@temporalio/workflow';
import { BoundaryResults } from '../../common/boundary-results';
import { interruption, neverStarted, readBoundaryResult } from './activity-results';
import { runToolInput, type EffectStrategy } from './effect-strategy';
import { writeActivity } from './write-activities';

/**
 * `irreversible_write`: waits for a human decision under a durable timer, then executes exactly
 * once. Denied → `denied`; no answer in time → `approval_expired`; approved but no worker started it
 * within its schedule-to-start bound → `not_run` (nothing ran); cut off → `outcome_unknown`.
 */
export const irreversibleWriteStrategy: EffectStrategy = {
  concurrent: false,
  async run({ taskId, call, allowedTools, approvals }) {
    const { policy } = call;
    const requestedAt = Date.now();
    approvals.open({
      callId: call.callId,
      tool: call.tool,
      // What waits is shown redacted; the real arguments stay in the call, which runs with them.
      args: call.redactedValues ? call.shownArgs : call.args,
      argsDigest: call.argsDigest,
      ...(policy.definitionDigest ? { definitionDigest: policy.definitionDigest } : {}),
      ...(call.redactedValues ? { redactedValues: call.redactedValues, shownDigest: call.shownDigest } : {}),
      requestedAt: new Date(requestedAt).toISOString(),
      expiresAt: new Date(requestedAt + policy.approvalTimeoutMs).toISOString(),
    });
    const waited = () => approvals.decisionFor(call.callId) !== undefined || approvals.historyFull();
    const answered = await condition(waited, policy.approvalTimeoutMs, {
      summary: `approval of ${call.callId}: ${call.summary ?? call.tool}`,
    });
    approvals.close(call.callId);
    const decided = answered && approvals.decisionFor(call.callId) !== undefined;
    // Workflow time, the same on replay: how long the call waited for its decision (or its expiry).
    const approvalWaitMs = Date.now() - requestedAt;
    if (answered && !decided) {
      const { historyLength, historySize } = workflowInfo();
      const message = `the turn's history reached its limit (${historyLength} events, ${historySize} bytes) while ${call.tool} waited for approval; it did not run`;
      return { ...BoundaryResults.failure('not_run', message, { retryable: false }), approvalWaitMs };
    }
    if (!decided) {
      const expired = BoundaryResults.failure(
        'approval_expired',
        `nobody decided on ${call.tool} within ${policy.approvalTimeoutMs / 1000} s`,
        {
          retryable: false,
        },
      );
      return { ...expired, approvalWaitMs };
    }
    const decision = approvals.decisionFor(call.callId)!;
    if (decision.decision === 'deny') {
      const by = decision.approver ? ` by ${decision.approver}` : '';
      return { ...BoundaryResults.denied(`denied${by}${decision.reason ? `: ${decision.reason}` : ''}`), approvalWaitMs };
    }
    try {
      const ran = readBoundaryResult(await writeActivity(call)(runToolInput({ taskId, call, allowedTools })));
      return { ...ran, executions: ran.executions > 0 ? 1 : 0, approvalWaitMs };
    } catch (error) {
      if (neverStarted(error)) {
        const waited = `${policy.scheduleToStartMs! / 1000} s`;
        const notRun = BoundaryResults.failure(
          'not_run',
          `${call.tool} was approved, but no worker started it within ${waited}; it did not run`,
          {
            retryable: false,
          },
        );
        return { ...notRun, approvalWaitMs };
      }
      return {
        ...BoundaryResults.outcomeUnknown(`${call.tool} was cut off and is not run again: ${interruption(error)}`, 1),
        approvalWaitMs,
      };
    }
  },
};
