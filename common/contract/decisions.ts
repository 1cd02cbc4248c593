import type { AgentReference } from './agent';
import type { NotificationReceipt } from './notifications';
import type { TurnLineage } from './turn';

/**
 * The waits for a person and their decisions: approvals (an irreversible call), resolutions (a write
 * whose outcome is unknown) and resume decisions (a model stream cut off after chunks went out).
 * Each kind has the same three shapes: what waits (`Pending…`), the decision its signal and update
 * take, and the receipt its update returns ({@link DecisionKinds}).
 */

/** What every entry waiting for a person shows besides its subject: which wait it is, and when it stops waiting. */
export interface PendingWait {
  /**
   * Which wait of its call (or step) this is: 1, then 2 and on when it waits again. From round 2 on,
   * a decision must name it (`round`), and a signed one signs it.
   */
  round: number;
  /** When the wait ends if nobody decided. */
  expiresAt: string;
  /** Who was told of this wait, when, and what failed (config `approvals.notify`); left out when no route matches it. */
  notifications?: NotificationReceipt[];
  /** Set once the wait was escalated (a route's `escalateAfter`): the approver group told, which may decide on it too. */
  escalatedTo?: string;
  /** In a subagent's turn: where the waiting turn stands in its tree, and its own workflow id, to which the decision goes. */
  lineage?: WaitLineage;
}

/** Where a wait in a subagent's turn stands: the turn's lineage, and the workflow id of the turn that waits. */
export interface WaitLineage extends TurnLineage {
  /** The turn that waits: a decision is sent to this workflow, and a signed one signs this id. */
  workflowId: string;
}

/**
 * A wait in a turn below this one (a subagent's, at any depth), as its parent reported it: enough to
 * find it and to send the decision to exactly the turn that waits. The arguments are not carried up;
 * they are in that turn's own `state` query.
 */
export interface WaitBelow {
  kind: keyof DecisionKinds;
  /** The turn that waits: the decision goes to this workflow (its update or signal), bound to its call, digest and round. */
  workflowId: string;
  /** Approvals and resolutions: the call that waits. */
  callId?: string;
  /** Resume decisions: the model step that waits. */
  step?: number;
  tool?: string;
  /** What a decision names: the digest of the arguments as shown (`shownDigest` when redacted, else `argsDigest`). */
  argsDigest?: string;
  round: number;
  expiresAt: string;
  lineage: WaitLineage;
  /** The agent whose turn asks (left out for the default agent). */
  agent?: AgentReference;
}

/** What a subagent's turn signals its parent (`waitsBelow`) on each change: every wait in it and below it, newest `sequence` wins. */
export interface WaitsReport {
  /** The reporting turn (a child of the receiver). */
  workflowId: string;
  /** Counts the reporter's reports: one that arrives after a newer one changes nothing. */
  sequence: number;
  waits: WaitBelow[];
}

/** What every decision on a wait may carry besides its verdict: the round it decides on and, when signed, its signature. */
export interface DecisionSignature {
  /** The wait decided on (the pending entry's `round`); required from round 2 on. */
  round?: number;
  /** Signed decisions (required when the worker has approver keys): the signing key's name, recorded as who decided. */
  keyId?: string;
  /** When the decision was signed, an ISO 8601 UTC time. */
  signedAt?: string;
  /** Base64 Ed25519 signature over the decision's signed fields (docs/approvals.md). */
  signature?: string;
  /** Set by the turn on a decision taken from a stand-in: the approver who named them, in whose place they decided. */
  for?: string;
}

/** What an update returns for an accepted decision: the fields that name it, and `accepted`. */
export type Receipt<Decision, Named extends keyof Decision> = Pick<Decision, Named> & { accepted: true };

/** An irreversible call waiting for a human decision. */
export interface PendingApproval extends PendingWait {
  callId: string;
  tool: string;
  /** The arguments as they may be shown: each secret (the worker's redaction patterns) replaced when `redactedValues` is set. */
  args: unknown;
  /** SHA-256 of the canonical JSON of the real arguments, the ones the call runs with (with `definitionDigest`: of `{ args, definitionDigest }`). */
  argsDigest: string;
  /** Tools from elsewhere (MCP): the digest of the tool's definition, which the digests bind too. */
  definitionDigest?: string;
  /** The digest of the policy the call was checked against (the worker's declaration of the tool: effect, bounds, schema). */
  policyDigest?: string;
  /** Strings in `args` whose secrets were replaced; left out when `args` are the real arguments. */
  redactedValues?: number;
  /**
   * With `redactedValues`: SHA-256 of the canonical JSON of `args` as shown, computed by the worker
   * from the real arguments. A decision may name it instead of `argsDigest`; it binds the decision
   * to the real arguments just as well, since the worker recorded both.
   */
  shownDigest?: string;
  requestedAt: string;
  /** Why no rule or grant decided it, when one came close (a rule past its cap, a grant revoked or used up). */
  policyNote?: string;
  /** The agent whose turn asks (left out for the default agent). */
  agent?: AgentReference;
}

/** A human decision on one pending call: the `approval` signal's and the `decide` update's argument. */
export interface ApprovalDecision extends DecisionSignature {
  callId: string;
  decision: 'approve' | 'deny';
  approver?: string;
  reason?: string;
  /** When given, must equal the pending call's argsDigest (or its shownDigest, when its arguments were redacted). */
  argsDigest?: string;
  /**
   * Approvals only: the arguments the call is to run with instead, edited by the approver (then `argsDigest`, of the
   * arguments shown, is required). They are checked against the tool's schema and authorization like a model's call.
   */
  args?: unknown;
  /** Recorded on an accepted edit: the digest of the edited arguments, which the call runs with. */
  editedDigest?: string;
  /**
   * Approvals only: a standing grant given with this approval — later calls of the same tool that match
   * its condition, in the same task (or conversation), are approved without asking until it expires, is
   * used up or is revoked. A signed decision signs it too.
   */
  grant?: GrantRequest;
  /** Recorded on an accepted grant: the id it is listed and revoked by. */
  grantId?: string;
  /**
   * Recorded on an automatic decision: the rule (config `approvals.rules`) or the grant that decided,
   * which is also its `approver` (`rule:<name>`, `grant:<id>`). A person's decision has none.
   */
  via?: 'rule' | 'grant';
}

/** What a person grants with an approval: the calls it approves after this one. */
export interface GrantRequest {
  /** How long it approves, in milliseconds from the approval (at most 30 days). */
  forMs: number;
  /** A JSON Schema the arguments must match, read as strictly as a rule's (docs/approvals.md); any arguments of the tool when left out. */
  when?: Record<string, unknown>;
  /** Where it approves: the calls of this task (the default), or of this conversation. */
  scope?: 'task' | 'conversation';
  /** At most this many calls approved by it. */
  maxCalls?: number;
}

/** A standing grant as the store keeps it (`tollgate grants list`). */
export interface Grant {
  id: string;
  tool: string;
  when?: Record<string, unknown>;
  scope: 'task' | 'conversation';
  /** The task id, or the conversation's workflow id. */
  scopeKey: string;
  /** The call whose approval gave it, and its turn. */
  workflowId: string;
  callId: string;
  grantedBy: string;
  grantedAt: string;
  expiresAt: string;
  maxCalls?: number;
  /** Calls it approved so far. */
  uses: number;
  revokedAt?: string;
  revokedBy?: string;
  /** When the granting decision was signed: the key's name and the signature, as evidence. */
  keyId?: string;
  signature?: string;
}

/** What the `decide` update returns for an accepted decision. */
export type DecisionReceipt = Receipt<ApprovalDecision, 'callId' | 'decision'> & {
  /** With edited arguments: their digest, and the idempotency key is theirs. */
  editedDigest?: string;
};

/** A write whose outcome is unknown, waiting for a person's `resolve`. */
export interface PendingResolution extends PendingWait {
  callId: string;
  tool: string;
  /** As shown: redacted like a pending approval's. */
  args: unknown;
  /** What a resolution must name: the same digest an approval of this call names (its shownDigest when redacted). */
  argsDigest: string;
  /** When the arguments were redacted: the digest of them as shown, which a resolution may name instead. */
  shownDigest?: string;
  /** Why nobody can tell whether it took effect. */
  reason: string;
  since: string;
}

/** A person's word on a write whose outcome was unknown: the `resolve` update's and signal's argument. */
export interface ResolutionDecision extends DecisionSignature {
  callId: string;
  outcome: 'applied' | 'not_applied';
  /** Must equal the pending resolution's argsDigest. */
  argsDigest: string;
  resolver?: string;
  note?: string;
}

/** What the `resolve` update returns for an accepted resolution. */
export type ResolutionReceipt = Receipt<ResolutionDecision, 'callId' | 'outcome'>;

/** A model step whose stream broke after chunks went out, waiting for a person's `resume` decision. */
export interface PendingResume extends PendingWait {
  step: number;
  /** Chunks that had gone out before the break. */
  chunks: number;
  /** The text that had streamed (redacted, its last 8,000 characters). */
  partialText: string;
  since: string;
}

/** A person's decision on an interrupted stream: the `resume` signal's and update's argument. */
export interface ResumeDecision extends DecisionSignature {
  /** The step that waits (`pendingResume.step`): a decision meant for another step changes nothing. */
  step: number;
  /** `retry` asks the model again for the same step; `stop` ends the turn `model_failed`. */
  decision: 'retry' | 'stop';
  /** Who decided, for the record; a signed decision's is the name of its key. */
  by?: string;
}

/** What the `resume` update returns for an accepted decision. */
export type ResumeReceipt = Receipt<ResumeDecision, 'step' | 'decision'>;

/** Each kind of wait for a person (the values of `TollgateWaitingFor`): what waits, the decision it takes, the receipt of its update. */
export interface DecisionKinds {
  approval: { pending: PendingApproval; decision: ApprovalDecision; receipt: DecisionReceipt };
  resolution: { pending: PendingResolution; decision: ResolutionDecision; receipt: ResolutionReceipt };
  resume: { pending: PendingResume; decision: ResumeDecision; receipt: ResumeReceipt };
}

/** A decision that changed nothing, and why. */
export interface RejectedDecision {
  /** What was sent, when its JSON is at most 1,024 characters; a {@link TruncatedDecision} otherwise. */
  decision: unknown;
  /** Why it was refused, at most 300 characters. */
  why: string;
  at: string;
}

/** A rejected decision too large to keep whole: the first 1,024 characters of its JSON, and how long that JSON was. */
export interface TruncatedDecision {
  truncated: true;
  jsonChars: number;
  json: string;
}
