import type { CheckCallInput, CheckedToolCall } from '../../common/activity-types';
import type { ApprovalDecision } from '../../common/contract/decisions';
import type { PolicyVerdict } from '../../common/activity-types';
import { MAX_DECISION_CHARS, REJECTED_DECISION_BOUNDS } from '../../common/defaults';
import { grantRequestProblem } from '../../common/grant-request';
import { checks, clip, DecisionDesk, type DecisionKind, type DecisionRecord, type WaitObserver } from './desk';

const call = (decision: Partial<ApprovalDecision>) => `call ${decision.callId}`;

/** An approval: an irreversible call waits in `pendingApprovals` until a person approves or denies it (the `approval` signal, the `decide` update). */
export const APPROVAL: DecisionKind<'approval'> = {
  kind: 'approval',
  notAnObject: 'a decision must be an object { callId, decision, approver?, reason?, argsDigest?, keyId?, signedAt?, signature? }',
  unencrypted: 'the decision arrived unencrypted; with payload encryption on, decisions must come from a client holding the keyring',
  maxChars: MAX_DECISION_CHARS,
  checks: [
    ({ decision: { callId, decision: verdict } }) => {
      if (typeof callId !== 'string') return 'callId must be a string';
      if (verdict !== 'approve' && verdict !== 'deny') return `decision must be "approve" or "deny", got ${JSON.stringify(verdict)}`;
      return undefined;
    },
    ({ decision: { approver, decision: verdict, grant } }) => {
      if (typeof approver === 'string' && /^(rule|grant):/.test(approver))
        return `approver "${approver}": names starting rule: or grant: are kept for the turn's automatic decisions`;
      if (grant === undefined) return undefined;
      if (verdict !== 'approve') return 'a grant goes only with an approval';
      return grantRequestProblem(grant);
    },
    checks.undecided((callId) => `call ${callId} was already decided`),
    checks.freshSignature(call),
    checks.waits(({ decision }) => `no call ${decision.callId} waits for approval`),
    checks.openRound(call),
    checks.inGroup<'approval'>(
      (decision) => decision.approver,
      (pending) => pending.tool,
    ),
    ({ decision: { callId, argsDigest }, pending, desk }) => {
      if (argsDigest === undefined && (desk.record.requireDigest || desk.record.signing)) {
        return `argsDigest is required: send the digest of the arguments of call ${callId} you decide on (pendingApprovals in the state query)`;
      }
      const named = argsDigest === pending!.argsDigest || (pending!.shownDigest !== undefined && argsDigest === pending!.shownDigest);
      return argsDigest !== undefined && !named ? `argsDigest does not match the arguments of call ${callId}` : undefined;
    },
    (judging) => {
      const { callId, decision: verdict, argsDigest, args } = judging.decision;
      if (args === undefined) return checks.signed<'approval'>()(judging);
      if (verdict !== 'approve') return 'args (edited arguments) go only with an approval';
      if (argsDigest === undefined)
        return `argsDigest is required with edited arguments: the digest of the arguments of call ${callId} you were shown`;
      // The signature of an edit covers the edited arguments' digest, known once the check ran (`checkEdit`).
      return undefined;
    },
  ],
  subject: (decision) => decision.callId!,
  pendingSubject: (pending) => pending.callId,
  waiting: (state) => state.pendingApprovals,
  // Which agent asks goes with each waiting call, for the people who decide (the CLI's inbox, the web inbox, the Web UI).
  add: (state, pending) => void state.pendingApprovals.push(state.agent ? { ...pending, agent: state.agent } : pending),
  remove(state, callId) {
    const index = state.pendingApprovals.findIndex((entry) => entry.callId === callId);
    if (index >= 0) state.pendingApprovals.splice(index, 1);
  },
  phase: 'awaiting_approval',
  after: 'tools',
  signed: (decision, pending, editedArgsDigest) => ({
    ...decision,
    callId: decision.callId!,
    decision: decision.decision!,
    argsDigest: decision.argsDigest!,
    editedArgsDigest,
    round: pending?.round,
    ...(decision.grant !== undefined ? { grant: decision.grant } : {}),
  }),
  taken({ callId, decision, approver, reason, keyId, signedAt, signature, grant }, round, signed) {
    // A signed decision's approver is the name of the key that signed it.
    const taken: ApprovalDecision = signed
      ? { callId, decision, approver: keyId, reason, keyId, signedAt }
      : { callId, decision, approver, reason };
    if (round > 1) taken.round = round;
    // A grant outlives the decision: its signature is kept with it, as evidence of who granted.
    if (grant !== undefined) Object.assign(taken, { grant }, signed && typeof signature === 'string' ? { signature } : {});
    return taken;
  },
  record: (state, taken) => void state.decisions.push(taken),
};

/** An approved call whose arguments a person edited: the call as checked, the digest of what they were shown, and who. */
export interface CallEdited {
  call: CheckedToolCall;
  originalDigest: string;
  editor?: string;
}

/**
 * The approvals of one turn: the desk of the `approval` kind, with what only approvals have — edited
 * arguments (checked like a model's call before they are taken) and a wait that also ends when the
 * turn's history is full.
 */
export class ApprovalBook extends DecisionDesk<'approval'> {
  /** Approved calls whose arguments a person edited, as checked, by call id. */
  private readonly edits = new Map<string, CallEdited>();
  /** The turn's tool list, for checking edited arguments as the model's calls are checked. */
  allowedTools?: string[];
  /**
   * Whether the turn's history has reached its limits: a wait for a decision ends then, so that a
   * flood of signals (which the server records whether or not they are taken) ends the turn with
   * `history_limit` instead of getting it terminated.
   */
  historyFull: () => boolean = () => false;

  constructor(
    record: DecisionRecord,
    /** Checks a call's arguments as the boundary checks a model's (the `checkCall` local activity). */
    private readonly checkCall: (input: CheckCallInput) => Promise<CheckedToolCall>,
    observer?: WaitObserver<'approval'>,
  ) {
    super(APPROVAL, record, observer);
  }

  /**
   * Checks an approval's edited arguments as a model's call is checked (schema, the turn's tool list,
   * the tool's authorization), then judges the decision again (the call may have been decided
   * meanwhile) and its signature over the edited digest. The checked call, or why not.
   */
  async checkEdit(decision: ApprovalDecision): Promise<{ call: CheckedToolCall; why?: undefined } | { why: string }> {
    const pending = this.pendingFor(decision.callId);
    if (!pending) return { why: `no call ${decision.callId} waits for approval` };
    const call = await this.checkCall({
      taskId: this.record.state.taskId,
      callId: decision.callId,
      tool: pending.tool,
      args: decision.args,
      allowedTools: this.allowedTools,
    });
    const again = this.judge(decision);
    if (again) return { why: again };
    if (call.refusal) {
      return {
        why: clip(`the edited arguments are refused (${call.refusal.code}): ${call.refusal.message}`, REJECTED_DECISION_BOUNDS.whyChars),
      };
    }
    const unsigned = this.signatureProblem(decision, call.argsDigest);
    return unsigned ? { why: clip(unsigned, REJECTED_DECISION_BOUNDS.whyChars) } : { call };
  }

  /** A decision with edited arguments, as the `approval` signal brings it: checked, then taken or recorded as rejected. */
  async offerEdited(decision: ApprovalDecision): Promise<void> {
    const why = this.judge(decision);
    if (why) return void this.record.reject(decision, why);
    const checked = await this.checkEdit(decision);
    if (checked.why !== undefined) return void this.record.reject(decision, checked.why);
    this.accept(decision, checked.call);
  }

  /** Takes a decision already judged valid; an approval with edited arguments comes with the call as checked (`checkEdit`). */
  override accept(decision: ApprovalDecision, edited?: CheckedToolCall): ApprovalDecision {
    if (!edited) return super.accept(decision);
    return this.acceptAmended(decision, (taken) => {
      // What the record shows of the edit is redacted like a waiting call's arguments.
      Object.assign(taken, { argsDigest: decision.argsDigest, args: edited.redactedValues ? edited.shownArgs : edited.args });
      taken.editedDigest = edited.argsDigest;
      this.edits.set(decision.callId, { call: edited, originalDigest: decision.argsDigest!, editor: taken.approver });
    });
  }

  /** The call as a person edited it on approval, with the digest of what they were shown; nothing when not edited. */
  editFor(callId: string): CallEdited | undefined {
    return this.edits.get(callId);
  }

  /** Digests of the arguments of calls a person denied in this turn: no rule or grant approves them again. */
  readonly deniedDigests: string[] = [];

  /**
   * Records what a rule or a grant decided on a call, in `decisions` as a person's decision is
   * recorded: `approver` is `rule:<name>` or `grant:<id>`, with the digest of the arguments decided on.
   */
  recordAutomatic(callId: string, verdict: Extract<PolicyVerdict, { via: unknown }>): ApprovalDecision {
    const taken: ApprovalDecision = {
      callId,
      decision: verdict.decision,
      approver: verdict.by,
      via: verdict.via,
      argsDigest: verdict.argsDigest,
      ...(verdict.reason !== undefined ? { reason: verdict.reason } : {}),
    };
    this.record.state.decisions.push(taken);
    this.record.host.publish();
    return taken;
  }

  /** Records the id a person's grant was recorded under, on their decision. */
  grantRecorded(callId: string, grantId: string): void {
    const taken = this.decisionFor(callId);
    if (taken) taken.grantId = grantId;
    this.record.host.publish();
  }

  /** Forgets the decision on a call that goes back to waiting for approval (its write was found not applied); the record stays in `decisions`. */
  override forget(callId: string): void {
    super.forget(callId);
    this.edits.delete(callId);
  }
}
