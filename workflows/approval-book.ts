import { proxyLocalActivities, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { Activities } from '../activities';
import type { CheckedToolCall } from '../common/activity-types';
import { MAX_DECISION_CHARS, REJECTED_DECISION_BOUNDS } from '../common/defaults';
import { AWAITING_APPROVAL_SEARCH_ATTRIBUTE } from '../common/search-attributes';
import type { ApprovalDecision, PendingApproval, PendingResume, TruncatedDecision } from '../common/contract/decisions';
import type { TurnState } from '../common/contract/turn';
import { signatureProblem } from '../common/signed-decision';
import { unencryptedMode } from '../common/unencrypted';
import { waitingFor } from './waiting-for';
import { DecisionLedger } from './decision-ledger';
import { TurnTelemetry } from './turn-telemetry';

const { checkCall } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  summary: 'check edited arguments',
  retry: { maximumAttempts: 3 },
});

function clip(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/** A decision's JSON (or its text, when it has none). */
function jsonOf(decision: unknown): string {
  try {
    return JSON.stringify(decision) ?? String(decision);
  } catch {
    return String(decision);
  }
}

/** A rejected decision as its record keeps it: whole when small, else the start of its JSON and its size. */
function bounded(decision: unknown): unknown {
  const json = jsonOf(decision);
  const { decisionChars } = REJECTED_DECISION_BOUNDS;
  if (json.length <= decisionChars) return decision;
  const truncated: TruncatedDecision = { truncated: true, jsonChars: json.length, json: json.slice(0, decisionChars) };
  return truncated;
}

/**
 * The approvals of one turn: what waits for a human, what was decided, and what was rejected.
 * It keeps the `state` query, the `TollgateAwaitingApproval` search attribute and the workflow's
 * current details (shown in the Web UI) in step.
 */
export class ApprovalBook {
  private readonly decided = new Map<string, ApprovalDecision>();
  /** Where the turn reports its spans and counts (the waits of its approvals among them). */
  telemetry = new TurnTelemetry();

  /** Approved calls whose arguments a person edited, as checked, by call id. */
  private readonly edits = new Map<string, { call: CheckedToolCall; originalDigest: string; editor?: string }>();
  /** Every wait's round and every signature taken, for approvals, resolutions and resumes alike. */
  readonly ledger = new DecisionLedger();
  /** Whether a decision must name the digest of the arguments it decides on (the config's `approvals.requireDigest`). */
  requireDigest = false;
  /**
   * The approvers' public keys (base64 by name) and how old a signature may be, when the worker's
   * config names them (`approvals.publicKeysEnv`): then every decision must be signed by one of them.
   */
  signing?: { publicKeys: Record<string, string>; maxAgeMs: number };
  /**
   * The turn's history limits (`limits.maxHistoryEvents`, `limits.maxHistoryBytes`): a wait for a
   * decision ends when the history reaches them, so that a flood of signals (which the server records
   * whether or not they are taken) ends the turn with `history_limit` instead of getting it terminated.
   */
  historyLimits?: { maxEvents: number; maxBytes: number };

  constructor(private readonly state: TurnState) {}

  /** Why a decision cannot be taken (at most a few hundred characters), or nothing when it can. */
  judge(decision: unknown): string | undefined {
    const why = this.reason(decision);
    return why === undefined ? undefined : clip(why, REJECTED_DECISION_BOUNDS.whyChars);
  }

  private reason(decision: unknown): string | undefined {
    if (!decision || typeof decision !== 'object') {
      return 'a decision must be an object { callId, decision, approver?, reason?, argsDigest?, keyId?, signedAt?, signature? }';
    }
    const chars = jsonOf(decision).length;
    if (chars > MAX_DECISION_CHARS) return `the decision is ${chars} characters of JSON; at most ${MAX_DECISION_CHARS} are taken`;
    if (unencryptedMode(decision)) {
      return 'the decision arrived unencrypted; with payload encryption on, decisions must come from a client holding the keyring';
    }
    const { callId, decision: verdict, argsDigest } = decision as Partial<ApprovalDecision>;
    if (typeof callId !== 'string') return 'callId must be a string';
    if (verdict !== 'approve' && verdict !== 'deny') return `decision must be "approve" or "deny", got ${JSON.stringify(verdict)}`;
    if (this.decided.has(callId)) return `call ${callId} was already decided`;
    const { signature, round } = decision as Partial<ApprovalDecision>;
    if (this.ledger.signatureTaken(signature)) return `this signed decision was already taken once in this turn (call ${callId})`;
    const pending = this.state.pendingApprovals.find((entry) => entry.callId === callId);
    if (!pending) return `no call ${callId} waits for approval`;
    const wrongRound = this.ledger.roundProblem(round, pending.round, `call ${callId}`);
    if (wrongRound) return wrongRound;
    if (argsDigest === undefined && (this.requireDigest || this.signing)) {
      return `argsDigest is required: send the digest of the arguments of call ${callId} you decide on (pendingApprovals in the state query)`;
    }
    const named = argsDigest === pending.argsDigest || (pending.shownDigest !== undefined && argsDigest === pending.shownDigest);
    if (argsDigest !== undefined && !named) return `argsDigest does not match the arguments of call ${callId}`;
    const { args } = decision as Partial<ApprovalDecision>;
    if (args !== undefined) {
      if (verdict !== 'approve') return 'args (edited arguments) go only with an approval';
      if (argsDigest === undefined)
        return `argsDigest is required with edited arguments: the digest of the arguments of call ${callId} you were shown`;
      // The signature of an edit covers the edited arguments' digest, known once the check ran (`checkEdit`).
      return undefined;
    }
    return this.signatureReason(decision as Partial<ApprovalDecision>, undefined);
  }

  /** Why a decision's signature does not count (nothing when signing is off); an edit's covers its edited digest too. */
  private signatureReason(decision: Partial<ApprovalDecision>, editedArgsDigest: string | undefined): string | undefined {
    if (!this.signing) return undefined;
    const { callId, decision: verdict, argsDigest } = decision as ApprovalDecision;
    const round = this.state.pendingApprovals.find((entry) => entry.callId === callId)?.round;
    // Date.now() is the workflow's clock: the same on every replay.
    const check = { ...this.signing, workflowId: workflowInfo().workflowId, now: Date.now() };
    return signatureProblem({ ...decision, callId, decision: verdict, argsDigest: argsDigest!, editedArgsDigest, round }, check);
  }

  /** The turn's tool list, for checking edited arguments as the model's calls are checked. */
  allowedTools?: string[];

  /**
   * Checks an approval's edited arguments as a model's call is checked (schema, the turn's tool list,
   * the tool's authorization; the `checkCall` local activity), then judges the decision again (the call
   * may have been decided meanwhile) and its signature over the edited digest. The checked call, or why not.
   */
  async checkEdit(decision: ApprovalDecision): Promise<{ call: CheckedToolCall; why?: undefined } | { why: string }> {
    const pending = this.state.pendingApprovals.find((entry) => entry.callId === decision.callId);
    if (!pending) return { why: `no call ${decision.callId} waits for approval` };
    const call = await checkCall({
      taskId: this.state.taskId,
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
    const unsigned = this.signatureReason(decision, call.argsDigest);
    return unsigned ? { why: clip(unsigned, REJECTED_DECISION_BOUNDS.whyChars) } : { call };
  }

  /** A decision with edited arguments, as the `approval` signal brings it: checked, then taken or recorded as rejected. */
  async offerEdited(decision: ApprovalDecision): Promise<void> {
    const why = this.judge(decision);
    if (why) return void this.reject(decision, why);
    const checked = await this.checkEdit(decision);
    if (checked.why !== undefined) return void this.reject(decision, checked.why);
    this.accept(decision, checked.call);
  }

  /** The call as a person edited it on approval, with the digest of what they were shown; nothing when not edited. */
  editFor(callId: string): { call: CheckedToolCall; originalDigest: string; editor?: string } | undefined {
    return this.edits.get(callId);
  }

  /** Takes a decision if it is valid, or records it as rejected; returns why it was rejected. */
  offer(decision: ApprovalDecision): string | undefined {
    const why = this.judge(decision);
    if (why) {
      this.reject(decision, why);
      return why;
    }
    this.accept(decision);
    return undefined;
  }

  /** Records a rejected decision (an approval's or another's, such as `resume`), bounded in size, keeping the newest few (`REJECTED_DECISION_BOUNDS`). */
  reject(decision: unknown, why: string): void {
    const rejected = this.state.rejectedDecisions;
    rejected.push({ decision: bounded(decision), why, at: new Date(Date.now()).toISOString() });
    const excess = rejected.length - REJECTED_DECISION_BOUNDS.kept;
    if (excess > 0) {
      rejected.splice(0, excess);
      this.state.rejectedDecisionsDropped += excess;
    }
  }

  /**
   * Records a message whose payload did not decode (see decodeMessage): what is known of it, and why.
   * Nothing else changes; the turn goes on waiting and answering queries.
   */
  rejectUndecodable(payload: { encoding: string; bytes: number }, why: string): void {
    this.reject({ undecodable: payload }, clip(why, REJECTED_DECISION_BOUNDS.whyChars));
  }

  /** Takes a decision already judged valid; an approval with edited arguments comes with the call as checked (`checkEdit`). */
  accept(decision: ApprovalDecision, edited?: CheckedToolCall): void {
    const { callId, decision: verdict, approver, reason, keyId, signedAt } = decision;
    const round = this.state.pendingApprovals.find((entry) => entry.callId === callId)?.round ?? 1;
    // A signed decision's approver is the name of the key that signed it.
    const taken: ApprovalDecision = this.signing
      ? { callId, decision: verdict, approver: keyId, reason, keyId, signedAt }
      : { callId, decision: verdict, approver, reason };
    if (round > 1) taken.round = round;
    if (edited) {
      // What the record shows of the edit is redacted like a waiting call's arguments.
      Object.assign(taken, { argsDigest: decision.argsDigest, args: edited.redactedValues ? edited.shownArgs : edited.args });
      taken.editedDigest = edited.argsDigest;
      this.edits.set(callId, { call: edited, originalDigest: decision.argsDigest!, editor: taken.approver });
    }
    this.decided.set(callId, taken);
    this.state.decisions.push(taken);
    this.ledger.takeSignature(decision.signature);
  }

  /** Forgets the decision on a call that goes back to waiting for approval (its write was found not applied); the record stays in `decisions`. */
  forget(callId: string): void {
    this.decided.delete(callId);
    this.edits.delete(callId);
  }

  /** Whether the turn's history has reached its limits (see {@link historyLimits}). */
  historyFull(): boolean {
    if (!this.historyLimits) return false;
    const { historyLength, historySize } = workflowInfo();
    return historyLength >= this.historyLimits.maxEvents || historySize >= this.historyLimits.maxBytes;
  }

  /** The decision on a call, once there is one. */
  decisionFor(callId: string): ApprovalDecision | undefined {
    return this.decided.get(callId);
  }

  /** Shows a call as waiting for approval, in the next round of its waits. */
  open(waiting: Omit<PendingApproval, 'round'>): void {
    const pending: PendingApproval = { ...waiting, round: this.ledger.nextRound('approval', waiting.callId) };
    this.state.pendingApprovals.push(pending);
    this.telemetry.approvalOpened({
      callId: pending.callId,
      tool: pending.tool,
      requestedAt: Date.parse(pending.requestedAt),
      expiresAt: Date.parse(pending.expiresAt),
    });
    this.state.phase = 'awaiting_approval';
    this.publish();
  }

  /** Takes a call off the waiting list. */
  close(callId: string): void {
    const index = this.state.pendingApprovals.findIndex((entry) => entry.callId === callId);
    if (index >= 0) this.state.pendingApprovals.splice(index, 1);
    this.telemetry.approvalClosed(callId);
    if (this.state.pendingApprovals.length === 0 && this.state.phase === 'awaiting_approval') this.state.phase = 'tools';
    this.publish();
  }

  /** Updates the search attributes (`TollgateAwaitingApproval`, `approval` in `TollgateWaitingFor`) and the Web UI's details from the current state. */
  publish(): void {
    const awaiting = this.state.pendingApprovals.length > 0;
    const current = workflowInfo().typedSearchAttributes.get(AWAITING_APPROVAL_SEARCH_ATTRIBUTE);
    // One upsert for both, so the inbox costs a wait no more history events than the approval flag alone.
    const changes: SearchAttributeUpdatePair[] = [];
    if (current !== awaiting) changes.push({ key: AWAITING_APPROVAL_SEARCH_ATTRIBUTE, value: awaiting });
    const listed = waitingFor.update('approval', awaiting);
    if (listed) changes.push(listed);
    if (changes.length > 0) upsertSearchAttributes(changes);
    setCurrentDetails(renderDetails(this.state));
  }
}

/** At most this many characters of one waiting call's arguments go into the Web UI's details. */
export const DETAILS_ARGS_CHARS = 2_000;

/** A waiting call's (already redacted) arguments as pretty JSON for the details, bounded, with no fence breaking out. */
function shownJson(args: unknown): string {
  const whole = (JSON.stringify(args, null, 2) ?? 'undefined').replace(/`/g, '\\u0060');
  if (whole.length <= DETAILS_ARGS_CHARS) return whole;
  return `${whole.slice(0, DETAILS_ARGS_CHARS)}\n… ${whole.length - DETAILS_ARGS_CHARS} more characters (the whole arguments: tollgate status --json)`;
}

/** The details of a model step waiting for a `resume` decision: what had streamed, and the exact JSON of each decision. */
function resumeDetails(pending: PendingResume): string[] {
  const round = pending.round > 1 ? { round: pending.round } : {};
  const send = (decision: 'retry' | 'stop') => JSON.stringify({ step: pending.step, decision, ...round });
  const text = pending.partialText.replace(/`/g, "'");
  const shown = text.length <= DETAILS_ARGS_CHARS ? text : `…${text.slice(-DETAILS_ARGS_CHARS)}`;
  return [
    '### Waiting for a resume decision',
    '',
    `- **step ${pending.step + 1}** · the model stream broke after ${pending.chunks} chunk${pending.chunks === 1 ? '' : 's'} had gone out · since ${pending.since} · stops at ${pending.expiresAt}`,
    '',
    '  ```text',
    ...shown.split('\n').map((line) => `  ${line}`),
    '  ```',
    '',
    `To ask the model again, send the \`resume\` signal with \`${send('retry')}\`; to stop the turn, \`${send('stop')}\`; or \`tollgate resume <workflowId> [--stop]\`.`,
    '',
  ];
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** The markdown the Web UI shows for a turn: what waits for a person (approvals, a resume decision) and the tool calls so far. */
export function renderDetails(state: TurnState): string {
  const lines = [
    `**Task** \`${cell(state.taskId)}\` · **status** ${state.status} · **phase** ${state.phase} · **step** ${state.step + 1}`,
    '',
  ];
  if (state.pendingApprovals.length > 0) {
    lines.push('### Waiting for approval', '');
    for (const pending of state.pendingApprovals) {
      const digest = pending.shownDigest ?? pending.argsDigest;
      lines.push(`- **${pending.callId}** · ${pending.tool} · expires ${pending.expiresAt} · argsDigest \`${digest}\``);
      const round = pending.round > 1 ? { round: pending.round } : {};
      const send = JSON.stringify({ callId: pending.callId, decision: 'approve', argsDigest: digest, ...round }).replace(/`/g, '\\u0060');
      lines.push(`  To approve, send the \`approval\` signal with \`${send}\` (\`"deny"\` to deny)`);
      if (pending.redactedValues)
        lines.push(
          `  ${pending.redactedValues} value${pending.redactedValues === 1 ? '' : 's'} redacted; the digest names the arguments as shown`,
        );
      lines.push(
        '',
        '  ```json',
        ...shownJson(pending.args)
          .split('\n')
          .map((line) => `  ${line}`),
        '  ```',
        '',
      );
    }
    lines.push(
      '',
      'Decide with the `approval` signal, e.g. `{ "callId": "…", "decision": "approve", "argsDigest": "…" }`, or `tollgate approve <workflowId> <callId>`.',
      '',
    );
  }
  if (state.pendingResume) lines.push(...resumeDetails(state.pendingResume));
  if ((state.pendingResolutions?.length ?? 0) > 0) {
    lines.push('### Waiting for a resolution (outcome unknown)', '');
    for (const pending of state.pendingResolutions!) {
      const digest = pending.shownDigest ?? pending.argsDigest;
      lines.push(`- **${pending.callId}** · ${pending.tool} · expires ${pending.expiresAt} · ${cell(pending.reason)}`, '');
      const round = pending.round > 1 ? { round: pending.round } : {};
      const json = JSON.stringify({ callId: pending.callId, outcome: 'applied', argsDigest: digest, ...round, note: '…' });
      lines.push(`  Send the \`resolve\` signal with \`${json}\` (or \`"outcome": "not_applied"\`), or \`tollgate resolve\`.`, '');
    }
  }
  if (state.toolCalls.length > 0) {
    lines.push('### Tool calls', '');
    for (const event of state.toolCalls) {
      lines.push(
        `- ${event.callId} · ${event.tool} · ${event.effect} · **${event.status}**${event.code ? ` \`${event.code}\`` : ''} · ${event.attempts} execution${event.attempts === 1 ? '' : 's'} · ${event.durationMs} ms`,
      );
    }
  }
  return lines.join('\n');
}
