import { ActivityFailure, condition, proxyLocalActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { Activities, BoundaryResult, PolicyVerdict } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { ApprovalDecision } from '../../common/contract/decisions';
import type { ApprovalRecord } from '../../common/contract/tools';
import { leaseWait, releaseNotApplied, resolveUnknown } from '../decisions/unknown-outcome';
import { interruption, neverStarted } from './activity-results';
import { runToolInput, type EffectContext, type EffectStrategy, type RunnableCall } from './effect-strategy';
import { lookupActivity, writeActivity } from './write-activities';

const { decideByPolicy, recordGrant } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  summary: 'approval rules and grants',
  retry: { maximumAttempts: 3, initialInterval: '200 ms' },
});

/** Why a policy activity failed, whatever it threw: the turn goes on to a person rather than failing its task. */
function failureMessage(error: unknown): string {
  return error instanceof ActivityFailure
    ? (error.cause?.message ?? error.message)
    : error instanceof Error
      ? error.message
      : String(error);
}

/** The conversation a turn belongs to (its parent workflow), for grants scoped to it. */
function conversationOf(): { conversationId?: string } {
  const { parent } = workflowInfo();
  return parent ? { conversationId: parent.workflowId } : {};
}

/**
 * What the worker's rules and the standing grants say of a call, asked once (a local activity whose
 * answer is recorded, so replay never asks again). A turn whose settings predate them, or rules that
 * cannot be evaluated (the store down), leave the call to a person.
 */
async function policyVerdict({ taskId, call, approvals }: EffectContext): Promise<PolicyVerdict> {
  if (!approvals.record.policies) return { decision: 'ask' };
  try {
    return await decideByPolicy({
      workflowId: workflowInfo().workflowId,
      taskId,
      ...conversationOf(),
      callId: call.callId,
      tool: call.tool,
      args: call.args,
      argsDigest: call.argsDigest,
      at: Date.now(),
      deniedDigests: [...approvals.deniedDigests],
    });
  } catch (error) {
    // Whatever failed (the store, the activity), nothing is approved unseen: a person decides.
    return { decision: 'ask', note: `the approval rules could not be evaluated, so a person decides: ${failureMessage(error)}` };
  }
}

/** Records the grant a person gave with their approval; the approval stands whether or not the grant could be recorded. */
async function giveGrant({ taskId, call, approvals }: EffectContext, decision: ApprovalDecision): Promise<void> {
  const failed = (why: string) =>
    approvals.record.reject(
      { callId: call.callId, grant: decision.grant },
      `the approval of call ${call.callId} stands; its grant was not recorded: ${why}`,
    );
  try {
    const recorded = await recordGrant({
      workflowId: workflowInfo().workflowId,
      taskId,
      ...conversationOf(),
      callId: call.callId,
      round: decision.round ?? 1,
      tool: call.tool,
      grant: decision.grant!,
      grantedBy: decision.approver ?? 'a person',
      at: Date.now(),
      ...(decision.keyId ? { keyId: decision.keyId } : {}),
      ...(decision.signature ? { signature: decision.signature } : {}),
    });
    if (recorded.recorded) approvals.grantRecorded(call.callId, recorded.grant.id);
    else failed(recorded.why);
  } catch (error) {
    failed(failureMessage(error));
  }
}

/** Who decided, as the call's event shows it. */
function personal(decision: ApprovalDecision): ApprovalRecord {
  return { decision: decision.decision, by: decision.approver ?? 'a person', via: 'person' };
}

/**
 * Waits for a human decision on the call; the result to give the model when it is not an approval,
 * the decision, and how long it waited (workflow time, the same on replay).
 */
async function awaitApproval(
  { call, approvals }: EffectContext,
  policyNote?: string,
): Promise<{ refused?: BoundaryResult; waitedMs: number; decision?: ApprovalDecision }> {
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
    ...(policyNote ? { policyNote } : {}),
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
    return { refused: BoundaryResults.denied(`denied${by}${decision.reason ? `: ${decision.reason}` : ''}`), waitedMs, decision };
  }
  return { waitedMs, decision };
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
    // The rules and grants decide first, once: a call that comes back to approval later is a person's to decide.
    let verdict = await policyVerdict(context);
    if (verdict.decision === 'deny') {
      approvals.recordAutomatic(call.callId, verdict);
      const approval: ApprovalRecord = { decision: 'deny', by: verdict.by, via: verdict.via };
      return { ...BoundaryResults.denied(`denied by ${verdict.by}${verdict.reason ? `: ${verdict.reason}` : ''}`), executions, approval };
    }
    for (;;) {
      let approval: ApprovalRecord;
      if (verdict.decision === 'approve') {
        approvals.recordAutomatic(call.callId, verdict);
        approval = { decision: 'approve', by: verdict.by, via: verdict.via };
      } else {
        const { refused, waitedMs, decision } = await awaitApproval(context, verdict.decision === 'ask' ? verdict.note : undefined);
        approvalWaitMs += waitedMs;
        if (refused) {
          if (decision?.decision === 'deny') approvals.deniedDigests.push(call.argsDigest);
          return { ...refused, executions, approvalWaitMs, ...(decision ? { approval: personal(decision) } : {}) };
        }
        approval = personal(decision!);
        if (decision!.grant !== undefined) await giveGrant(context, decision!);
      }
      verdict = { decision: 'ask' };
      const { runnable, edited: asEdited = (outcome: BoundaryResult) => outcome } = approvedCall(context);
      const edited = (outcome: BoundaryResult): BoundaryResult => ({ ...asEdited(outcome), approvalWaitMs, approval });
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
