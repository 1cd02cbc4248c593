import type { PendingWait, WaitBelow, WaitLineage, WaitsReport } from '../../common/contract/decisions';
import type { TurnLineage, TurnState } from '../../common/contract/turn';
import type { Kind } from './desk';
import { DECISION_KINDS } from './kinds';

/** The most waits one report carries, and the most a turn lists below it: a tree cannot grow a turn's state or history without bound. */
export const MAX_WAITS_BELOW = 200;

/** What the workflow gives the waits below: its id, and how a report reaches its parent. */
export interface WaitsBelowHost {
  workflowId(): string;
  /** Signals the parent turn (`waitsBelow`); a parent that has ended is no error. */
  send(parentWorkflowId: string, report: WaitsReport): void;
}

/** The id prefix of every turn below `workflowId`: a child turn's id is `<parent workflow id>-call-<callId>`. */
function below(workflowId: string): string {
  return `${workflowId}-call-`;
}

/** What any kind's waiting entry may name. */
type AnyPending = PendingWait & { callId?: string; step?: number; tool?: string; argsDigest?: string; shownDigest?: string };

/** A wait of this turn as its parent lists it: no arguments, what a decision names, and where it goes. */
function entryOf(kind: Kind, pending: AnyPending, lineage: WaitLineage, state: TurnState): WaitBelow {
  const digest = pending.shownDigest ?? pending.argsDigest;
  return {
    kind,
    workflowId: lineage.workflowId,
    ...(typeof pending.callId === 'string' ? { callId: pending.callId } : {}),
    ...(typeof pending.step === 'number' ? { step: pending.step } : {}),
    ...(typeof pending.tool === 'string' ? { tool: pending.tool } : {}),
    ...(digest !== undefined ? { argsDigest: digest } : {}),
    round: pending.round,
    expiresAt: pending.expiresAt,
    lineage,
    ...(state.agent ? { agent: state.agent } : {}),
  };
}

/**
 * The decisions waiting in the turns below one turn, carried up durably: a subagent's turn signals
 * its parent on every change of what waits in it and below it (its own waits and its children's
 * reports), and each parent keeps the newest report of each child, lists them in its state
 * (`waitsBelow`) and reports on to its own parent. Signals are recorded in the receiver's history,
 * so the root's list is rebuilt by replay after a worker restarts; nothing is kept outside it.
 */
export class WaitsBelow {
  /** The newest report of each child, by its workflow id. */
  private readonly reports = new Map<string, WaitsReport>();
  /** Children whose turn ended: a report of theirs arriving late changes nothing. */
  private readonly ended = new Set<string>();
  private sequence = 0;
  private lastSent = '[]';

  constructor(
    private readonly state: TurnState,
    readonly lineage: TurnLineage | undefined,
    private readonly host: WaitsBelowHost,
  ) {}

  /** This turn's place in its tree, as its waits carry it (nothing for a root turn). */
  waitLineage(): WaitLineage | undefined {
    return this.lineage ? { ...this.lineage, workflowId: this.host.workflowId() } : undefined;
  }

  /** The root of this turn's tree: its own id for a root turn. */
  private root(): string {
    return this.lineage?.rootWorkflowId ?? this.host.workflowId();
  }

  /**
   * Why a report cannot be taken, or nothing: it must come from a turn below this one (ids by the
   * child rule), name only waits in that turn or below it, of this turn's tree, and be bounded.
   */
  judge(report: unknown): string | undefined {
    if (!report || typeof report !== 'object') return 'a waitsBelow report must be an object { workflowId, sequence, waits }';
    const { workflowId, sequence, waits } = report as Partial<WaitsReport>;
    if (typeof workflowId !== 'string' || !workflowId.startsWith(below(this.host.workflowId())))
      return `a waitsBelow report must come from a turn below this one (a workflow id starting ${below(this.host.workflowId())})`;
    if (typeof sequence !== 'number' || !Number.isInteger(sequence)) return 'a waitsBelow report needs a whole sequence number';
    if (!Array.isArray(waits) || waits.length > MAX_WAITS_BELOW)
      return `a waitsBelow report's waits must be a list of at most ${MAX_WAITS_BELOW}`;
    for (const wait of waits as unknown[]) {
      const entry = (wait ?? {}) as Partial<WaitBelow>;
      const place = typeof entry.workflowId === 'string' ? entry.workflowId : '';
      if (place !== workflowId && !place.startsWith(below(workflowId)))
        return `a wait reported by ${workflowId} must be in that turn or below it`;
      if (!entry.lineage || entry.lineage.workflowId !== place || entry.lineage.rootWorkflowId !== this.root())
        return `a wait reported by ${workflowId} must carry its lineage in the tree of ${this.root()}`;
      if (typeof entry.kind !== 'string' || !Object.hasOwn(DECISION_KINDS, entry.kind)) return 'a reported wait names an unknown kind';
    }
    return undefined;
  }

  /** Takes a child's report (already judged): the newest of that child replaces its older one. */
  take(report: WaitsReport): void {
    if (this.ended.has(report.workflowId)) return;
    const known = this.reports.get(report.workflowId);
    if (known && known.sequence >= report.sequence) return;
    this.reports.set(report.workflowId, report);
    this.changed();
  }

  /** A child's turn ended (its delegate call has its result, or failed): nothing of it waits any more. */
  childEnded(workflowId: string): void {
    this.ended.add(workflowId);
    if (this.reports.delete(workflowId)) this.changed();
  }

  /**
   * After any change of this turn's waits or of a child's report: the state lists the waits below, and
   * a subagent's turn reports its own waits and those below to its parent when they differ from what it sent last.
   */
  changed(): void {
    const listed = [...this.reports.values()].flatMap((report) => report.waits).slice(0, MAX_WAITS_BELOW);
    if (listed.length > 0 || this.state.waitsBelow !== undefined) this.state.waitsBelow = listed;
    const lineage = this.waitLineage();
    if (!lineage) return;
    const own = (Object.keys(DECISION_KINDS) as Kind[]).flatMap((kind) =>
      (DECISION_KINDS[kind].waiting(this.state) as AnyPending[]).map((pending) => entryOf(kind, pending, lineage, this.state)),
    );
    const waits = [...own, ...listed].slice(0, MAX_WAITS_BELOW);
    const sent = JSON.stringify(waits);
    if (sent === this.lastSent) return;
    this.lastSent = sent;
    this.sequence += 1;
    this.host.send(lineage.parentWorkflowId, { workflowId: lineage.workflowId, sequence: this.sequence, waits });
  }
}
