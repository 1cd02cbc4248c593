import { condition, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { BoundaryResult, StatusLookup } from '../common/activity-types';
import { BoundaryResults } from '../common/boundary-results';
import { OUTCOME_DEFAULTS, REJECTED_DECISION_BOUNDS } from '../common/defaults';
import type { WaitingKind } from '../common/search-attributes';
import { signatureProblem } from '../common/signed-decision';
import type { PendingResolution, ResolutionDecision } from '../common/contract/decisions';
import type { ToolResult } from '../common/contract/tools';
import type { TurnState } from '../common/contract/turn';
import { unencryptedMode } from '../common/unencrypted';
import type { ApprovalBook } from './approval-book';
import type { EffectContext } from './effects/effect-strategy';
import { waitingFor } from './waiting-for';

/** Adds `kind` to the turn's `TollgateWaitingFor` or removes it, through the one module that keeps it. */
export function setWaitingFor(kind: WaitingKind, waiting: boolean): void {
  if (waiting) waitingFor.add(kind);
  else waitingFor.remove(kind);
}

function clip(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/**
 * The writes of one turn whose outcome is unknown and wait for a person to say whether they took
 * effect. It keeps `pendingResolutions` and `resolutions` of the `state` query and the `resolution`
 * value of `TollgateWaitingFor` in step; rejected resolutions go with the approvals' rejected decisions.
 */
export class ResolutionBook {
  private readonly decided = new Map<string, ResolutionDecision>();
  /** `ask` waits for a person; `report` gives the model `outcome_unknown` at once (config `outcomes.onUnknown`). */
  mode: 'ask' | 'report' = 'report';
  /** How long `ask` waits (config `outcomes.resolveTimeout`). */
  timeoutMs: number = OUTCOME_DEFAULTS.resolveTimeoutMs;

  constructor(
    private readonly state: TurnState,
    private readonly approvals: ApprovalBook,
  ) {
    state.pendingResolutions = [];
    state.resolutions = [];
  }

  /** Why a resolution cannot be taken (at most a few hundred characters), or nothing when it can. */
  judge(resolution: unknown): string | undefined {
    const why = this.reason(resolution);
    return why === undefined ? undefined : clip(why, REJECTED_DECISION_BOUNDS.whyChars);
  }

  private reason(resolution: unknown): string | undefined {
    if (!resolution || typeof resolution !== 'object') {
      return 'a resolution must be an object { callId, outcome, argsDigest, resolver?, note?, keyId?, signedAt?, signature? }';
    }
    if (unencryptedMode(resolution)) {
      return 'the resolution arrived unencrypted; with payload encryption on, resolutions must come from a client holding the keyring';
    }
    const { callId, outcome, argsDigest, note, signature, round } = resolution as Partial<ResolutionDecision>;
    if (typeof callId !== 'string') return 'callId must be a string';
    if (outcome !== 'applied' && outcome !== 'not_applied') {
      return `outcome must be "applied" or "not_applied", got ${JSON.stringify(outcome)}`;
    }
    if (note !== undefined && typeof note !== 'string') return 'note must be a string';
    const pending = this.pendingResolutions().find((entry) => entry.callId === callId);
    if (!pending) return `no call ${callId} waits for a resolution`;
    if (this.decided.has(callId)) return `call ${callId} was already resolved`;
    const ledger = this.approvals.ledger;
    if (ledger.signatureTaken(signature)) return `this signed decision was already taken once in this turn (call ${callId})`;
    const wrongRound = ledger.roundProblem(round, pending.round, `call ${callId}`);
    if (wrongRound) return wrongRound;
    if (typeof argsDigest !== 'string') {
      return `argsDigest is required: send the digest of the arguments of call ${callId} (pendingResolutions in the state query)`;
    }
    if (argsDigest !== pending.argsDigest && argsDigest !== pending.shownDigest) {
      return `argsDigest does not match the arguments of call ${callId}`;
    }
    const signing = this.approvals.signing;
    if (!signing) return undefined;
    const check = { ...signing, workflowId: workflowInfo().workflowId, now: Date.now() };
    const { resolver, ...rest } = resolution as Partial<ResolutionDecision>;
    return signatureProblem({ ...rest, approver: resolver, callId, decision: outcome, argsDigest, round: pending.round }, check);
  }

  /** Takes a resolution if it is valid, or records it as rejected; returns why it was rejected. */
  offer(resolution: ResolutionDecision): string | undefined {
    const why = this.judge(resolution);
    if (why) {
      this.approvals.reject(resolution, why);
      return why;
    }
    this.accept(resolution);
    return undefined;
  }

  /** Takes a resolution already judged valid; a signed one's resolver is the name of its key. */
  accept(resolution: ResolutionDecision): void {
    const { callId, outcome, argsDigest, resolver, note, keyId, signedAt } = resolution;
    const taken: ResolutionDecision = this.approvals.signing
      ? { callId, outcome, argsDigest, resolver: keyId, note, keyId, signedAt }
      : { callId, outcome, argsDigest, resolver, note };
    const round = this.pendingResolutions().find((entry) => entry.callId === callId)?.round ?? 1;
    if (round > 1) taken.round = round;
    this.approvals.ledger.takeSignature(resolution.signature);
    this.decided.set(callId, taken);
    this.state.resolutions!.push(taken);
  }

  /** The resolution of a call, once there is one; `take` forgets it, so that the call may wait again later. */
  take(callId: string): ResolutionDecision | undefined {
    const taken = this.decided.get(callId);
    this.decided.delete(callId);
    return taken;
  }

  private pendingResolutions(): PendingResolution[] {
    return (this.state.pendingResolutions ??= []);
  }

  /** Shows a write as waiting for a resolution, in the next round of its waits. */
  open(waiting: Omit<PendingResolution, 'round'>): void {
    const pending: PendingResolution = { ...waiting, round: this.approvals.ledger.nextRound('resolution', waiting.callId) };
    this.pendingResolutions().push(pending);
    this.state.phase = 'awaiting_resolution';
    this.publish();
  }

  /** Takes a write off the waiting list. */
  close(callId: string): void {
    const list = this.pendingResolutions();
    const index = list.findIndex((entry) => entry.callId === callId);
    if (index >= 0) list.splice(index, 1);
    if (list.length === 0 && this.state.phase === 'awaiting_resolution') this.state.phase = 'tools';
    this.publish();
  }

  /** Updates `TollgateWaitingFor` and the Web UI's details from the current state. */
  publish(): void {
    setWaitingFor('resolution', this.pendingResolutions().length > 0);
    this.approvals.publish();
  }

  /** Whether a call decided is there. */
  has(callId: string): boolean {
    return this.decided.has(callId);
  }
}

const { resolveIntent } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  summary: 'record a resolution',
  retry: { maximumAttempts: 5, initialInterval: '500 ms' },
});

/** What became of a write whose outcome was unknown. */
export type Reconciled = { verdict: 'settled'; outcome: BoundaryResult } | { verdict: 'not_applied'; resolver: string };

/**
 * A write whose outcome is unknown: under `ask`, waits for a person's `resolve` (at most
 * `outcomes.resolveTimeout`). `applied` commits the intent with a receipt saying who resolved it
 * and settles the call as a success; `not_applied` gives the intent up in the store and leaves it to
 * the strategy to run again. No resolution in time, or `report`, settles it as `outcome_unknown`.
 */
export async function resolveUnknown(
  { taskId, call, resolutions }: Pick<EffectContext, 'taskId' | 'call' | 'resolutions'>,
  reason: string,
  executions: number,
): Promise<Reconciled> {
  const unknown: Reconciled = { verdict: 'settled', outcome: BoundaryResults.outcomeUnknown(reason, executions) };
  if (!resolutions || resolutions.mode !== 'ask') return unknown;
  const since = Date.now();
  resolutions.open({
    callId: call.callId,
    tool: call.tool,
    args: call.redactedValues ? call.shownArgs : call.args,
    argsDigest: call.argsDigest,
    ...(call.redactedValues ? { shownDigest: call.shownDigest } : {}),
    reason,
    since: new Date(since).toISOString(),
    expiresAt: new Date(since + resolutions.timeoutMs).toISOString(),
  });
  const resolved = await condition(() => resolutions.has(call.callId), resolutions.timeoutMs, {
    summary: `resolution of ${call.callId}: ${call.summary ?? call.tool}`,
  });
  resolutions.close(call.callId);
  if (!resolved) {
    const waited = `${Math.round(resolutions.timeoutMs / 1000)} s`;
    return { verdict: 'settled', outcome: BoundaryResults.outcomeUnknown(`${reason}; nobody resolved it within ${waited}`, executions) };
  }
  const { outcome, resolver = 'a person', note } = resolutions.take(call.callId)!;
  const base = { taskId, callId: call.callId, tool: call.tool, args: call.args, resolver };
  if (outcome === 'not_applied') {
    await resolveIntent({ ...base, outcome });
    return { verdict: 'not_applied', resolver };
  }
  const receipt: ToolResult = {
    status: 'success',
    data: { resolvedByPerson: true, resolver, ...(note ? { note } : {}), message: `${resolver} said this call took effect` },
  };
  await resolveIntent({ ...base, outcome, receipt });
  return { verdict: 'settled', outcome: BoundaryResults.fromReceipt(receipt, executions) };
}

/**
 * How long to wait before looking up again, when a lookup found an attempt still in flight and this
 * call has not waited yet: the attempt's lease ends first, so the next lookup may tell.
 */
export function leaseWait(status: StatusLookup, waitedAlready: boolean): number | undefined {
  if (status.state !== 'unknown' || status.inFlightForMs === undefined || waitedAlready) return undefined;
  return status.inFlightForMs + 1_000;
}

/** Gives up the started record of a write its status check found not applied, so that it may run again after a new approval. */
export async function releaseNotApplied({ taskId, call }: Pick<EffectContext, 'taskId' | 'call'>): Promise<void> {
  await resolveIntent({ taskId, callId: call.callId, tool: call.tool, args: call.args, outcome: 'not_applied', resolver: 'status check' });
}
