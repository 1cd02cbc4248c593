import { sleep } from '@temporalio/workflow';
import { BoundaryResults } from '../../common/boundary-results';
import { interruption, readBoundaryResult } from './activity-results';
import type { EffectStrategy } from './effect-strategy';
import { lookupActivity, writeActivity } from './write-activities';

/**
 * `reversible_write`: a status lookup before every execution; applied → success from the receipt,
 * the handler not called; not applied → one execution; cut off → look up again; cannot tell →
 * `outcome_unknown`. At most the tool's maxAttempts executions.
 */
export const reversibleWriteStrategy: EffectStrategy = {
  concurrent: false,
  async run({ taskId, call, allowedTools }) {
    const { policy } = call;
    const runTool = writeActivity(call);
    const lookupStatus = lookupActivity(call);
    let executions = 0;
    let lastProblem = 'not attempted';
    for (let round = 0; ; round++) {
      const status = await lookupStatus({ taskId, callId: call.callId, tool: call.tool, args: call.args });
      if (status.state === 'applied') return BoundaryResults.fromReceipt(status.receipt, executions);
      if (status.state === 'unknown') return BoundaryResults.outcomeUnknown(`${call.tool}: ${status.reason}`, executions);
      if (executions >= policy.maxAttempts) {
        return BoundaryResults.failure('transient_failure', `${call.tool} did not complete in ${executions} attempts: ${lastProblem}`, { executions });
      }
      if (round > 0) {
        await sleep(Math.min(policy.retry.initialIntervalMs * policy.retry.backoffCoefficient ** (round - 1), policy.retry.maximumIntervalMs));
      }
      try {
        const ran = readBoundaryResult(await runTool({ taskId, callId: call.callId, tool: call.tool, args: call.args, allowedTools, effect: policy.effect }));
        executions += ran.executions > 0 ? 1 : 0;
        if (ran.result.status === 'error' && ran.result.retryable) {
          lastProblem = ran.result.message ?? ran.result.code ?? 'error';
          continue;
        }
        return { ...ran, executions };
      } catch (error) {
        executions += 1;
        lastProblem = interruption(error);
      }
    }
  },
};
