import { ActivityFailure, condition, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities, BoundaryResult, PolicyVerdict } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { ApprovalDecision } from '../../common/contract/decisions';
import type { ApprovalRecord } from '../../common/contract/tools';
import type { EffectContext, RunnableCall } from './effect-strategy';
import { activitySummary } from './activity-summary';

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

/**
 * The conversation a turn belongs to (its parent workflow), for grants scoped to it. A subagent's
 * turn belongs to its root turn's: the top of its chain of workflows when that is not the root turn
 * itself (nothing when the server does not say, so a conversation's grant is then neither used nor given there).
 */
function conversationOf({ approvals }: EffectContext): { conversationId?: string } {
  const { parent, root } = workflowInfo();
  const lineage = approvals.record.host.lineage?.();
  if (lineage) return root && root.workflowId !== lineage.rootWorkflowId ? { conversationId: root.workflowId } : {};
  return parent ? { conversationId: parent.workflowId } : {};
}

/**
 * What the worker's rules and the standing grants say of a call, asked once (a local activity whose
 * answer is recorded, so replay never asks again). A turn whose settings predate them, or rules that
 * cannot be evaluated (the store down), leave the call to a person.
 */
async function policyVerdict(context: EffectContext): Promise<PolicyVerdict> {
  const { taskId, call, approvals } = context;
  if (!approvals.record.policies) return { decision: 'ask' };
  try {
    return await decideByPolicy({
      workflowId: workflowInfo().workflowId,
      taskId,
      ...conversationOf(context),
      callId: call.callId,
      tool: call.tool,
      args: call.args,
      argsDigest: call.argsDigest,
      at: Date.now(),
      deniedDigests: [...approvals.deniedDigests],
      // The turn's agent: its own approval rules are matched before the worker's.
      ...(call.agent ? { agent: call.agent.name } : {}),
    });
  } catch (error) {
    // Whatever failed (the store, the activity), nothing is approved unseen: a person decides.
    return { decision: 'ask', note: `the approval rules could not be evaluated, so a person decides: ${failureMessage(error)}` };
  }
}

/** Records the grant a person gave with their approval; the approval stands whether or not the grant could be recorded. */
async function giveGrant(context: EffectContext, decision: ApprovalDecision): Promise<void> {
  const { taskId, call, approvals } = context;
  const failed = (why: string) =>
    approvals.record.reject(
      { callId: call.callId, grant: decision.grant },
      `the approval of call ${call.callId} stands; its grant was not recorded: ${why}`,
    );
  try {
    const recorded = await recordGrant({
      workflowId: workflowInfo().workflowId,
      taskId,
      ...conversationOf(context),
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
  return {
    decision: decision.decision,
    by: decision.approver ?? 'a person',
    via: 'person',
    ...(decision.for ? { for: decision.for } : {}),
  };
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
      summary: `approval of ${call.callId}: ${activitySummary(call)}`,
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

/** A call's way past a person (or a rule, or a grant): asked before each run that needs a decision. */
export interface ApprovalGate {
  /** Whether the call waits for a decision at all. */
  waits: boolean;
  /** Asks for a decision; a result when the call may not run (denied, expired, the history full), `undefined` once approved. */
  pass(executions: number): Promise<BoundaryResult | undefined>;
  /** The call as approved (edited arguments included). */
  runnable(): RunnableCall;
  /** A result as the model and the call's event get it: with the edit, the decider and the time waited. */
  shown(outcome: BoundaryResult): BoundaryResult;
  /** Forgets the decision, so the next run needs a new one. */
  forget(): void;
}

/** The gate of a call that waits for nobody. */
export function openGate(call: RunnableCall): ApprovalGate {
  return { waits: false, pass: async () => undefined, runnable: () => call, shown: (outcome) => outcome, forget: () => undefined };
}

/**
 * The gate of a call that needs a decision: the rules and grants decide first, once (a call that
 * comes back to approval later is a person's to decide); then a person under a durable timer. A
 * denial is remembered, so no rule or grant approves the same arguments again in this turn.
 */
export function approvalGate(context: EffectContext): ApprovalGate {
  const { call, approvals } = context;
  let verdict: PolicyVerdict | undefined;
  // How long the call waited for its decisions, all of them (traces and metrics).
  let approvalWaitMs = 0;
  let approval: ApprovalRecord | undefined;
  let approved: ReturnType<typeof approvedCall> = { runnable: call };
  return {
    waits: true,
    async pass(executions) {
      if (!verdict) {
        verdict = await policyVerdict(context);
        if (verdict.decision === 'deny') {
          approvals.recordAutomatic(call.callId, verdict);
          approval = { decision: 'deny', by: verdict.by, via: verdict.via };
          return {
            ...BoundaryResults.denied(`denied by ${verdict.by}${verdict.reason ? `: ${verdict.reason}` : ''}`),
            executions,
            approval,
          };
        }
      }
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
      approved = approvedCall(context);
      return undefined;
    },
    runnable: () => approved.runnable,
    shown: (outcome) => ({
      ...(approved.edited ?? ((same: BoundaryResult) => same))(outcome),
      approvalWaitMs,
      ...(approval ? { approval } : {}),
    }),
    forget: () => approvals.forget(call.callId),
  };
}
