import { condition, sleep, workflowInfo } from '@temporalio/workflow';
import type { BoundaryResult } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { leaseWait, releaseNotApplied, resolveUnknown } from '../decisions/unknown-outcome';
import { interruption, neverStarted } from './activity-results';
import { runToolInput, type EffectContext, type EffectStrategy, type RunnableCall } from './effect-strategy';
import { lookupActivity, writeActivity } from './write-activities';

/**
 * Waits for a human decision on the call; the result to give the model when it is not an approval,
 * and how long it waited (workflow time, the same on replay).
 */
async function awaitApproval({ call, approvals }: EffectContext): Promise<{ refused?: BoundaryResult; waitedMs: number }> {
  const { policy } = call;
  const requestedAt = Date.now();
  approvals.open({
    callId: call.callId,
    tool: call.tool,
    // What waits is shown redacted; the real arguments stay in the call, which runs with them.
    args: call.redactedValues ? call.shownArgs : call.args,
    argsDigest: call.argsDigest,
    ...(policy.definitionDigest ? { definitionDigest: policy.definitionDigest } : {}),
    policyDigest: policy.policyDigest,
    ...(call.redactedValues ? { redactedValues: call.redactedValues, shownDigest: call.shownDigest } : {}),
    requestedAt: new Date(requestedAt).toISOString(),
    expiresAt: new Date(requestedAt + policy.approvalTimeoutMs).toISOString(),
  });
  // A flood of signals (recorded by the server whether or not they are taken) also ends the wait
  // once the history reaches the turn's limits, so the turn ends `history_limit` rather than terminated.
  const answered = await condition(
    () => approvals.decisionFor(call.callId) !== undefined || approvals.historyFull(),
    policy.approvalTimeoutMs,
    {
      summary: `approval of ${call.callId}: ${call.summary ?? call.tool}`,
    },
  );
  approvals.close(call.callId);
  const waitedMs = Date.now() - requestedAt;
  const decision = answered ? approvals.decisionFor(call.callId) : undefined;
  if (answered && !decision) {
    const { historyLength, historySize } = workflowInfo();
    const message = `the turn's history reached its limit (${historyLength} events, ${historySize} bytes) while ${call.tool} waited for approval; it did not run`;
    return { refused: BoundaryResults.failure('not_run', message, { retryable: false }), waitedMs };
  }
  if (!decision) {
    const message = `nobody decided on ${call.tool} within ${policy.approvalTimeoutMs / 1000} s`;
    return { refused: BoundaryResults.failure('approval_expired', message, { retryable: false }), waitedMs };
  }
  if (decision.decision === 'deny') {
    const by = decision.approver ? ` by ${decision.approver}` : '';
    return { refused: BoundaryResults.denied(`denied${by}${decision.reason ? `: ${decision.reason}` : ''}`), waitedMs };
  }
  return { waitedMs };
}

/**
 * The call as it runs after its approval: as the model asked, or with the arguments the approver
 * edited (checked like a model's call, with their own digest and so their own idempotency key).
 */
function approvedCall({ call, approvals }: EffectContext): { runnable: RunnableCall; edited?: (result: BoundaryResult) => BoundaryResult } {
  const edit = approvals.editFor(call.callId);
  if (!edit) return { runnable: call };
  const runnable = { ...edit.call, policy: call.policy, refusal: undefined } as RunnableCall;
  const by = edit.editor;
  const shown = edit.call.redactedValues ? edit.call.shownArgs : edit.call.args;
  const message = `this call ran with arguments edited by ${by ?? 'a person'} on approval, not the ones you asked for`;
  return {
    runnable,
    edited: (outcome) => ({
      ...outcome,
      result: { ...outcome.result, edited: { ...(by ? { by } : {}), args: shown, message } },
      edit: { originalDigest: edit.originalDigest, editedDigest: edit.call.argsDigest, ...(by ? { editor: by } : {}) },
    }),
  };
}

/**
 * After a cut-off: the status lookup first, then a person. Applied → the result to give the model;
 * not applied (by the lookup or a person) → `undefined`, the intent given up, and the call goes back
 * to waiting for approval.
 */
async function reconcile(context: EffectContext, reason: string, executions: number): Promise<BoundaryResult | undefined> {
  const { taskId, call } = context;
  const lookup = () => lookupActivity(call)({ taskId, callId: call.callId, tool: call.tool, args: call.args });
  let status = await lookup();
  const wait = leaseWait(status, false);
  if (wait !== undefined) {
    // The cut-off attempt may still be applying: its lease ends first, then the lookup asks once more.
    await sleep(wait);
    status = await lookup();
  }
  if (status.state === 'applied') return BoundaryResults.fromReceipt(status.receipt, executions);
  if (status.state === 'not_applied') {
    await releaseNotApplied({ taskId, call });
    return undefined;
  }
  const reconciled = await resolveUnknown(context, `${reason}; ${status.reason}`, executions);
  return reconciled.verdict === 'settled' ? reconciled.outcome : undefined;
}

/**
 * `irreversible_write`: waits for a human decision under a durable timer, then executes exactly
 * once. Denied → `denied`; no answer in time → `approval_expired`; approved but no worker started it
 * within its schedule-to-start bound → `not_run` (nothing ran). Cut off, or reported `outcome_unknown`
 * by the boundary → its status lookup: applied
 * → success from what it found; not applied → back to waiting for approval (it never runs again
 * without a person's word); cannot tell → a person's resolution (`outcomes.onUnknown: ask`), where
 * `not_applied` also goes back to approval, or `outcome_unknown`.
 */
export const irreversibleWriteStrategy: EffectStrategy = {
  async run(context) {
    const { taskId, call, allowedTools, approvals } = context;
    const { policy } = call;
    let executions = 0;
    // How long the call waited for its decisions, all of them (traces and metrics).
    let approvalWaitMs = 0;
    for (;;) {
      const { refused, waitedMs } = await awaitApproval(context);
      approvalWaitMs += waitedMs;
      if (refused) return { ...refused, executions, approvalWaitMs };
      const { runnable, edited: asEdited = (outcome: BoundaryResult) => outcome } = approvedCall(context);
      const edited = (outcome: BoundaryResult): BoundaryResult => ({ ...asEdited(outcome), approvalWaitMs });
      let ran: BoundaryResult;
      try {
        ran = await writeActivity(runnable)(runToolInput({ taskId, call: runnable, allowedTools }));
      } catch (error) {
        if (neverStarted(error)) {
          const waited = `${policy.scheduleToStartMs! / 1000} s`;
          const message = `${call.tool} was approved, but no worker started it within ${waited}; it did not run`;
          return edited({ ...BoundaryResults.failure('not_run', message, { retryable: false }), executions });
        }
        executions += 1;
        const reason = `${call.tool} was cut off and is not run again: ${interruption(error)}`;
        const reconciled = await reconcile({ ...context, call: runnable }, reason, executions);
        if (reconciled) return edited(reconciled);
        approvals.forget(call.callId);
        continue;
      }
      executions += ran.executions > 0 ? 1 : 0;
      // The boundary could not tell either (the intent held by another call, the store unreachable): reconciled the same way.
      if (ran.result.code !== 'outcome_unknown') return edited({ ...ran, executions });
      const reconciled = await reconcile({ ...context, call: runnable }, ran.result.message ?? `${call.tool}: outcome unknown`, executions);
      if (reconciled) return edited(reconciled);
      approvals.forget(call.callId);
    }
  },
};
