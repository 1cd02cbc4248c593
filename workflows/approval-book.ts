import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { REJECTED_DECISION_BOUNDS } from '../common/defaults';
import { AWAITING_APPROVAL_SEARCH_ATTRIBUTE } from '../common/search-attributes';
import type { ApprovalDecision, PendingApproval, TruncatedDecision, TurnState } from '../common/types';
import { signatureProblem } from '../common/signed-decision';
import { unencryptedMode } from '../common/unencrypted';

function clip(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/** A rejected decision as its record keeps it: whole when small, else the start of its JSON and its size. */
function bounded(decision: unknown): unknown {
  let json: string;
  try {
    json = JSON.stringify(decision) ?? String(decision);
  } catch {
    json = String(decision);
  }
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
  /** Signatures of decisions taken: a call back in approval (its write found not applied) needs a new one. */
  private readonly usedSignatures = new Set<string>();
  /** Whether a decision must name the digest of the arguments it decides on (the config's `approvals.requireDigest`). */
  requireDigest = false;
  /**
   * The approvers' public keys (base64 by name) and how old a signature may be, when the worker's
   * config names them (`approvals.publicKeysEnv`): then every decision must be signed by one of them.
   */
  signing?: { publicKeys: Record<string, string>; maxAgeMs: number };

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
    if (unencryptedMode(decision)) {
      return 'the decision arrived unencrypted; with payload encryption on, decisions must come from a client holding the keyring';
    }
    const { callId, decision: verdict, argsDigest } = decision as Partial<ApprovalDecision>;
    if (typeof callId !== 'string') return 'callId must be a string';
    if (verdict !== 'approve' && verdict !== 'deny') return `decision must be "approve" or "deny", got ${JSON.stringify(verdict)}`;
    if (this.decided.has(callId)) return `call ${callId} was already decided`;
    const { signature } = decision as Partial<ApprovalDecision>;
    if (typeof signature === 'string' && this.usedSignatures.has(signature))
      return `this signed decision was already taken once for call ${callId}`;
    const pending = this.state.pendingApprovals.find((entry) => entry.callId === callId);
    if (!pending) return `no call ${callId} waits for approval`;
    if (argsDigest === undefined && (this.requireDigest || this.signing)) {
      return `argsDigest is required: send the digest of the arguments of call ${callId} you decide on (pendingApprovals in the state query)`;
    }
    const named = argsDigest === pending.argsDigest || (pending.shownDigest !== undefined && argsDigest === pending.shownDigest);
    if (argsDigest !== undefined && !named) return `argsDigest does not match the arguments of call ${callId}`;
    if (!this.signing) return undefined;
    // Date.now() is the workflow's clock: the same on every replay.
    const check = { ...this.signing, workflowId: workflowInfo().workflowId, now: Date.now() };
    return signatureProblem({ ...(decision as Partial<ApprovalDecision>), callId, decision: verdict, argsDigest: argsDigest! }, check);
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

  /** Records a rejected decision, bounded in size, keeping the newest few (`REJECTED_DECISION_BOUNDS`). */
  reject(decision: unknown, why: string): void {
    const rejected = this.state.rejectedDecisions;
    rejected.push({ decision: bounded(decision), why, at: new Date(Date.now()).toISOString() });
    const excess = rejected.length - REJECTED_DECISION_BOUNDS.kept;
    if (excess > 0) {
      rejected.splice(0, excess);
      this.state.rejectedDecisionsDropped += excess;
    }
  }

  /** Takes a decision already judged valid. */
  accept(decision: ApprovalDecision): void {
    const { callId, decision: verdict, approver, reason, keyId, signedAt } = decision;
    // A signed decision's approver is the name of the key that signed it.
    const taken: ApprovalDecision = this.signing
      ? { callId, decision: verdict, approver: keyId, reason, keyId, signedAt }
      : { callId, decision: verdict, approver, reason };
    this.decided.set(callId, taken);
    this.state.decisions.push(taken);
    if (this.signing && decision.signature) this.usedSignatures.add(decision.signature);
  }

  /** Forgets the decision on a call that goes back to waiting for approval (its write was found not applied); the record stays in `decisions`. */
  forget(callId: string): void {
    this.decided.delete(callId);
  }

  /** The decision on a call, once there is one. */
  decisionFor(callId: string): ApprovalDecision | undefined {
    return this.decided.get(callId);
  }

  /** Shows a call as waiting for approval. */
  open(pending: PendingApproval): void {
    this.state.pendingApprovals.push(pending);
    this.state.phase = 'awaiting_approval';
    this.publish();
  }

  /** Takes a call off the waiting list. */
  close(callId: string): void {
    const index = this.state.pendingApprovals.findIndex((entry) => entry.callId === callId);
    if (index >= 0) this.state.pendingApprovals.splice(index, 1);
    if (this.state.pendingApprovals.length === 0 && this.state.phase === 'awaiting_approval') this.state.phase = 'tools';
    this.publish();
  }

  /** Updates the search attribute and the Web UI's details from the current state. */
  publish(): void {
    const awaiting = this.state.pendingApprovals.length > 0;
    const current = workflowInfo().typedSearchAttributes.get(AWAITING_APPROVAL_SEARCH_ATTRIBUTE);
    if (current !== awaiting) upsertSearchAttributes([{ key: AWAITING_APPROVAL_SEARCH_ATTRIBUTE, value: awaiting }]);
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

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** The markdown the Web UI shows for a turn: what waits for approval and the tool calls so far. */
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
