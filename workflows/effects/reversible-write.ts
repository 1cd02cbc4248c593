import { sleep } from '@temporalio/workflow';
import { BoundaryResults } from '../../common/boundary-results';
import { interruption } from './activity-results';
import { runToolInput, type EffectStrategy } from './effect-strategy';
import { leaseWait, resolveUnknown } from '../decisions/unknown-outcome';
import { lookupActivity, writeActivity } from './write-activities';

/** The backoff before round `round` (1 for the first retry). */
function backoffMs(retry: { initialIntervalMs: number; backoffCoefficient: number; maximumIntervalMs: number }, round: number): number {
  return Math.min(retry.initialIntervalMs * retry.backoffCoefficient ** (round - 1), retry.maximumIntervalMs);
}

/**
 * `reversible_write`: a status lookup before every execution; applied → success from the receipt,
 * the handler not called; not applied → one execution; cut off → back off, then look up again (so
 * the lookup sees what a handler still applying after its timeout did meanwhile);
 * cannot tell → a person's resolution under `outcomes.onUnknown: ask` (else `outcome_unknown`):
 * applied → success from their receipt; not applied → the intent given up, then a fresh lookup and
 * one more execution (a person's word counts where the lookup still cannot tell; applied still wins).
 * At most the tool's maxAttempts executions, plus one after each `not_applied` resolution.
 */
export const reversibleWriteStrategy: EffectStrategy = {
  async run({ taskId, call, allowedTools, resolutions }) {
    const { policy } = call;
    const runTool = writeActivity(call);
    const lookupStatus = lookupActivity(call);
    let executions = 0;
    let lastProblem = 'not attempted';
    // Rounds a person's `not_applied` added, and whether the latest lookup follows such a word.
    let granted = 0;
    let personSaysNotApplied = false;
    let waitedOutLease = false;
    for (let round = 0; ; round++) {
      if (round > 0) await sleep(backoffMs(policy.retry, round));
      const status = await lookupStatus({ taskId, callId: call.callId, tool: call.tool, args: call.args });
      if (status.state === 'applied') return { ...BoundaryResults.fromReceipt(status.receipt, executions), statusLookup: status.state };
      const wait = leaseWait(status, waitedOutLease);
      if (wait !== undefined) {
        // An attempt may still be applying: its lease ends first, then the lookup asks again (one more round, no execution).
        waitedOutLease = true;
        await sleep(wait);
        round--;
        continue;
      }
      if (status.state === 'unknown' && !personSaysNotApplied) {
        const reconciled = await resolveUnknown({ taskId, call, resolutions }, `${call.tool}: ${status.reason}`, executions);
        if (reconciled.verdict === 'settled') return { ...reconciled.outcome, statusLookup: status.state };
        granted++;
        personSaysNotApplied = true;
        continue;
      }
      personSaysNotApplied = false;
      // Every earlier round ran one attempt; one that timed out waiting for a place counts, though its handler never ran.
      if (round >= policy.maxAttempts + granted) {
        const failure = BoundaryResults.failure('transient_failure', `${call.tool} did not complete in ${round} attempts: ${lastProblem}`, {
          executions,
        });
        return { ...failure, statusLookup: status.state };
      }
      try {
        const ran = await runTool(runToolInput({ taskId, call, allowedTools }));
        executions += ran.executions > 0 ? 1 : 0;
        if (ran.result.status === 'error' && ran.result.retryable) {
          lastProblem = ran.result.message ?? ran.result.code ?? 'error';
          continue;
        }
        return { ...ran, executions, statusLookup: status.state };
      } catch (error) {
        executions += 1;
        lastProblem = interruption(error);
      }
    }
  },
};
