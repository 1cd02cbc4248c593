import { REJECTED_DECISION_BOUNDS } from '../../common/defaults';
import type { DecisionKinds, TruncatedDecision, WaitLineage } from '../../common/contract/decisions';
import type { TurnPhase, TurnState } from '../../common/contract/turn';
import { signatureProblem, type SignatureParts } from '../../common/signed-decision';
import { unencryptedMode } from '../../common/unencrypted';
import { groupProblem, type ApproverGroups } from '../../common/approver-groups';
import { standingFor, type StandInStatement } from '../../common/stand-in';

/** Marks the decision the group check judges as if the approver named by a stand-in's statement had sent it. */
const AS_APPROVER = Symbol('as the approver a stand-in decides for');
import { DecisionLedger } from './ledger';

/**
 * The core of every wait for a person, free of Temporal: a kind's desk judges a decision, takes it
 * or records it as rejected, and opens and closes its waits. What differs between the kinds
 * (approval, resolution, resume) is a {@link DecisionKind} declaration; what the workflow provides
 * (its clock, its id, the search attributes) comes in through a {@link DecisionHost}.
 */

/** One kind of wait for a person: a value of `TollgateWaitingFor`. */
export type Kind = keyof DecisionKinds;
/** What waits for a decision of a kind. */
export type Pending<K extends Kind> = DecisionKinds[K]['pending'];
/** A decision of a kind, as taken. */
export type Decision<K extends Kind> = DecisionKinds[K]['decision'];

/** What a decision is judged with: the decision as sent, the wait its subject names (when one waits) and the desk. */
export interface Judging<K extends Kind> {
  decision: Partial<Decision<K>>;
  pending: Pending<K> | undefined;
  desk: DecisionDesk<K>;
}

/** One check of a decision: why it cannot be taken, or nothing. */
export type Check<K extends Kind> = (judging: Judging<K>) => string | undefined;

/** What makes one kind of wait what it is; the desk does the rest the same way for every kind. */
export interface DecisionKind<K extends Kind> {
  kind: K;
  /** Why a value that is not an object is not a decision of this kind (it names the fields). */
  notAnObject: string;
  /** Why a decision whose payload arrived unencrypted is not taken. */
  unencrypted: string;
  /** The most characters of JSON a decision of this kind may have, when bounded. */
  maxChars?: number;
  /** The checks after the shape and the encryption, in the order their reasons are given. */
  checks: ReadonlyArray<Check<K>>;
  /** What a decision decides on (a call id, a step), as its round and its record are kept by. */
  subject(decision: Partial<Decision<K>>): string;
  /** The subject of a waiting entry. */
  pendingSubject(pending: Pending<K>): string;
  /** The waits of this kind in the turn's state. */
  waiting(state: TurnState): Pending<K>[];
  /** Puts a wait into the state, and takes one out by its subject. */
  add(state: TurnState, pending: Pending<K>): void;
  remove(state: TurnState, subject: string): void;
  /** The phase of a turn while its waits of this kind are open. */
  phase: TurnPhase;
  /** The phase once the last of them closed. */
  after: TurnPhase;
  /** The fields its signature covers (`edited`: the digest of an approval's edited arguments). */
  signed(decision: Partial<Decision<K>>, pending: Pending<K> | undefined, edited?: string): SignatureParts;
  /** The decision as the turn keeps it: a signed one's decider is the name of its key. */
  taken(decision: Decision<K>, round: number, signed: boolean): Decision<K>;
  /** Where the state lists taken decisions, when it does. */
  record?(state: TurnState, taken: Decision<K>): void;
  /** Prepares the state's lists of this kind when the turn starts. */
  init?(state: TurnState): void;
}

/** What the workflow gives the desks: its clock and id (the same on every replay) and the route to its search attributes and details. */
export interface DecisionHost {
  now(): number;
  workflowId(): string;
  /** Shows the state's waits: `changed` is the kind whose waits changed, none when only the turn's progress did. */
  publish(changed?: Kind): void;
  /** In a subagent's turn: its place in the tree, which each of its waits carries. */
  lineage?(): WaitLineage | undefined;
}

/** The approvers' public keys (base64 by name) and how old a signature may be. */
export interface Signing {
  publicKeys: Record<string, string>;
  maxAgeMs: number;
}

/** Cuts a text to `maxChars`, marking the cut. */
export function clip(text: string, maxChars: number): string {
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
 * What all the waits of one turn share: the ledger of rounds and signatures (a decision satisfies
 * exactly one wait), the signing keys, the record of rejected decisions, and the host.
 */
export class DecisionRecord {
  /** Every wait's round and every signature taken, for every kind. */
  readonly ledger = new DecisionLedger();
  /** Whether an approval must name the digest of the arguments it decides on (the config's `approvals.requireDigest`). */
  requireDigest = false;
  /** When the worker's config names approver keys (`approvals.publicKeysEnv`): then every decision must be signed by one of them. */
  signing?: Signing;
  /** Who may decide on which tool's calls (config `approvals.groups`). */
  groups?: ApproverGroups;
  /** A subagent's turn: the approver groups of the agents above it on its lineage path; a decider must pass each too. */
  aboveGroups?: ApproverGroups[];
  /** Whether irreversible calls are first put to the worker's rules and grants (settings `approvals.policies`). */
  policies = false;
  /** Who is told of each wait as it opens and closes, and to whom a wait was escalated (config `approvals.notify`). */
  notices?: WaitNotices;
  /** Statements naming stand-ins, signed by the approvers' keys (read at the turn's start; taken only with signing on). */
  standIns?: StandInStatement[];

  constructor(
    readonly state: TurnState,
    readonly host: DecisionHost,
  ) {}

  /** Records a rejected decision of any kind, bounded in size, keeping the newest few (`REJECTED_DECISION_BOUNDS`). */
  reject(decision: unknown, why: string): void {
    const rejected = this.state.rejectedDecisions;
    rejected.push({ decision: bounded(decision), why, at: new Date(this.host.now()).toISOString() });
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

  /** Why a decision's signature does not count (nothing when signing is off). */
  signatureProblem(parts: SignatureParts): string | undefined {
    if (!this.signing) return undefined;
    return signatureProblem(parts, { ...this.signing, workflowId: this.host.workflowId(), now: this.host.now() });
  }
}

/** Tells people of waits as they open, stops telling as they close, and knows which were escalated to whom. */
export interface WaitNotices {
  opened<K extends Kind>(kind: K, pending: Pending<K>): void;
  closed(kind: Kind, subject: string): void;
  /** The approver group a wait was escalated to, once it was. */
  escalatedTo(kind: Kind, subject: string): string | undefined;
  /** The members of an approver group. */
  membersOf(group: string): string[];
}

/** Observes a kind's waits opening and closing (the approvals' telemetry). */
export interface WaitObserver<K extends Kind> {
  opened(pending: Pending<K>): void;
  closed(subject: string): void;
}

/**
 * The waits of one kind in one turn: what waits for a person, what was decided, and why a decision
 * was refused. It keeps the state's lists of this kind in step and has them published on every change.
 */
export class DecisionDesk<K extends Kind> {
  private readonly decided = new Map<string, Decision<K>>();
  /** Subjects whose decision being judged comes from a stand-in, with the approver they stand in for. */
  readonly standingIn = new Map<string, string>();

  constructor(
    readonly declaration: DecisionKind<K>,
    readonly record: DecisionRecord,
    private readonly observer?: WaitObserver<K>,
  ) {
    declaration.init?.(record.state);
  }

  /** The waits of this kind open now. */
  waiting(): Pending<K>[] {
    return this.declaration.waiting(this.record.state);
  }

  /** The open wait of a subject, when there is one. */
  pendingFor(subject: string): Pending<K> | undefined {
    return this.waiting().find((entry) => this.declaration.pendingSubject(entry) === subject);
  }

  /** Why a decision cannot be taken (at most a few hundred characters), or nothing when it can. */
  judge(decision: unknown): string | undefined {
    const why = this.reason(decision);
    return why === undefined ? undefined : clip(why, REJECTED_DECISION_BOUNDS.whyChars);
  }

  private reason(decision: unknown): string | undefined {
    const { notAnObject, maxChars, unencrypted, checks, subject } = this.declaration;
    if (!decision || typeof decision !== 'object') return notAnObject;
    if (maxChars !== undefined) {
      const chars = jsonOf(decision).length;
      if (chars > maxChars) return `the decision is ${chars} characters of JSON; at most ${maxChars} are taken`;
    }
    if (unencryptedMode(decision)) return unencrypted;
    const sent = decision as Partial<Decision<K>>;
    // The subject is read only by checks after the kind's own have found its fields well formed.
    const judging: Judging<K> = {
      decision: sent,
      desk: this,
      get pending() {
        return judging.desk.pendingFor(subject(sent));
      },
    };
    for (const check of checks) {
      const why = check(judging);
      if (why !== undefined) return why;
    }
    return undefined;
  }

  /** Why a decision's signature does not count (nothing when signing is off); an edit's covers its edited digest too. */
  signatureProblem(decision: Partial<Decision<K>>, edited?: string): string | undefined {
    if (!this.record.signing) return undefined;
    const pending = this.pendingFor(this.declaration.subject(decision));
    return this.record.signatureProblem(this.declaration.signed(decision, pending, edited));
  }

  /** Takes a decision if it is valid, or records it as rejected; returns why it was rejected. */
  offer(decision: Decision<K>): string | undefined {
    const why = this.judge(decision);
    if (why) {
      this.record.reject(decision, why);
      return why;
    }
    this.accept(decision);
    return undefined;
  }

  /** Takes a decision already judged valid. */
  accept(decision: Decision<K>): Decision<K> {
    return this.acceptAmended(decision);
  }

  /** Takes a decision already judged valid; `amend` adds to the record kept of it before it is listed. */
  protected acceptAmended(decision: Decision<K>, amend?: (taken: Decision<K>) => void): Decision<K> {
    const subject = this.declaration.subject(decision);
    const round = this.pendingFor(subject)?.round ?? 1;
    const taken = this.declaration.taken(decision, round, this.record.signing !== undefined);
    amend?.(taken);
    // Taken from a stand-in: the record names the approver in whose place they decided. Judged here again, since an
    // update's validator (which judged it first) does not run on replay.
    if (this.record.standIns?.length) this.judge(decision);
    const onBehalf = this.standingIn.get(subject);
    if (onBehalf !== undefined) Object.assign(taken, { for: onBehalf });
    this.decided.set(subject, taken);
    this.declaration.record?.(this.record.state, taken);
    this.record.ledger.takeSignature((decision as { signature?: unknown }).signature);
    return taken;
  }

  /** The decision on a subject, once there is one. */
  decisionFor(subject: string): Decision<K> | undefined {
    return this.decided.get(subject);
  }

  /** Forgets the decision on a subject that may wait again; what the state lists of it stays. */
  forget(subject: string): void {
    this.decided.delete(subject);
  }

  /** Forgets every decision taken (a kind whose one wait at a time starts afresh). */
  forgetAll(): void {
    this.decided.clear();
  }

  /** Shows a subject as waiting, in the next round of its waits. */
  open(waiting: Omit<Pending<K>, 'round'>): Pending<K> {
    const { declaration, record } = this;
    const partial = waiting as Pending<K>;
    const lineage = record.host.lineage?.();
    const round = record.ledger.nextRound(declaration.kind, declaration.pendingSubject(partial));
    const pending = { ...partial, round, ...(lineage ? { lineage } : {}) } as Pending<K>;
    declaration.add(record.state, pending);
    this.observer?.opened(pending);
    record.state.phase = declaration.phase;
    record.host.publish(declaration.kind);
    record.notices?.opened(declaration.kind, pending);
    return pending;
  }

  /** Takes a subject off the waiting list. */
  close(subject: string): void {
    const { declaration, record } = this;
    declaration.remove(record.state, subject);
    this.observer?.closed(subject);
    record.notices?.closed(declaration.kind, subject);
    if (this.waiting().length === 0 && record.state.phase === declaration.phase) record.state.phase = declaration.after;
    record.host.publish(declaration.kind);
  }
}

/** The checks every kind has, each with the reason it gives. */
export const checks = {
  /**
   * An open wait is named; `why` says what is wrong when none is, and where the subject waits instead
   * when a turn below this one (a subagent's) has it waiting: the decision goes to that turn.
   */
  waits<K extends Kind>(why: (judging: Judging<K>) => string | undefined): Check<K> {
    return (judging) => {
      if (judging.pending) return undefined;
      const reason = why(judging);
      const { declaration, record } = judging.desk;
      const subject = declaration.subject(judging.decision);
      const places = (record.state.waitsBelow ?? [])
        .filter((wait) => wait.kind === declaration.kind && (wait.callId ?? String(wait.step)) === subject)
        .map((wait) => wait.workflowId);
      if (reason === undefined || places.length === 0) return reason;
      return `${reason} in this turn; it waits in ${places.join(', ')}, below this turn: send the decision there`;
    };
  },
  /** Its subject was not decided yet. */
  undecided<K extends Kind>(why: (subject: string, taken: Decision<K>) => string): Check<K> {
    return ({ decision, desk }) => {
      const subject = desk.declaration.subject(decision);
      const taken = desk.decisionFor(subject);
      return taken ? why(subject, taken) : undefined;
    };
  },
  /** Its signature was not taken before in this turn, for any wait. */
  freshSignature<K extends Kind>(what: (decision: Partial<Decision<K>>) => string): Check<K> {
    return ({ decision, desk }) =>
      desk.record.ledger.signatureTaken((decision as { signature?: unknown }).signature)
        ? `this signed decision was already taken once in this turn (${what(decision)})`
        : undefined;
  },
  /** It names the round of the wait open now. */
  openRound<K extends Kind>(what: (decision: Partial<Decision<K>>) => string): Check<K> {
    return ({ decision, pending, desk }) =>
      desk.record.ledger.roundProblem((decision as { round?: unknown }).round, pending!.round, what(decision));
  },
  /**
   * Its decider may decide on the tool's calls (config `approvals.groups`): the key's name when
   * signing is on, else the name the decision gives (which only signing proves).
   */
  inGroup<K extends Kind>(decider: (decision: Partial<Decision<K>>) => unknown, tool: (pending: Pending<K>) => string): Check<K> {
    const check: Check<K> = ({ decision, pending, desk }) => {
      const outer = !(decision as { [AS_APPROVER]?: true })[AS_APPROVER];
      if (outer && pending) desk.standingIn.delete(desk.declaration.pendingSubject(pending));
      const { groups, aboveGroups = [], signing } = desk.record;
      if ((!groups && aboveGroups.length === 0) || !pending) return undefined;
      const keyId = (decision as { keyId?: unknown }).keyId;
      // Signing on and no key named: the signature check says the decision is unsigned.
      if (signing && typeof keyId !== 'string') return undefined;
      const who = signing ? keyId : decider(decision);
      // The turn's own groups (the worker's and its agent's), then those of each agent above it: delegation widens no group.
      const problem =
        groupProblem(groups, tool(pending), who) ??
        aboveGroups
          .map((above) =>
            groupProblem(above, tool(pending), who)?.replace('(approvals.groups)', '(the groups of an agent above this subagent)'),
          )
          .find((why) => why !== undefined);
      if (!problem) return undefined;
      // A wait escalated to an approver group may be decided by its members too.
      const subject = desk.declaration.pendingSubject(pending);
      const escalatedTo = desk.record.notices?.escalatedTo(desk.declaration.kind, subject);
      if (escalatedTo && desk.record.notices!.membersOf(escalatedTo).includes(who as string)) return undefined;
      // A stand-in decides where the approver who named them may, as this same check says of the approver (no chains).
      const { standIns } = desk.record;
      if (!outer || !signing || !standIns?.length || typeof who !== 'string') return problem;
      const approverMay = (approver: string) =>
        check({ decision: { ...decision, keyId: approver, approver, resolver: approver, [AS_APPROVER]: true }, pending, desk }) ===
        undefined;
      const forWhom = standingFor({
        statements: standIns,
        publicKeys: signing.publicKeys,
        decider: who,
        mayDecide: approverMay,
        now: desk.record.host.now(),
      });
      if (forWhom === undefined) return problem;
      desk.standingIn.set(subject, forWhom);
      return undefined;
    };
    return check;
  },
  /** Its signature authenticates it, when the worker has approver keys. */
  signed<K extends Kind>(): Check<K> {
    return ({ decision, desk }) => desk.signatureProblem(decision);
  },
};
