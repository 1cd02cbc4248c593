import type { BoundaryResult, StatusLookup } from '../activity-types';
import type { EffectTraits } from '../effects';
import { leaseWait } from './claim-rule';

/** What a write's strategy remembers between its rounds. */
export interface RoundMemory {
  /** The call waited out an attempt's lease already (once per approval: a new approval starts afresh). */
  waitedOutLease: boolean;
  /** The latest lookup follows a person's `not_applied`: their word counts where the lookup still cannot tell. */
  personSaidNotApplied: boolean;
  /** Whether the bound on runs (the tool's attempts, plus one per `not_applied` from a person) leaves another. */
  runsLeft: boolean;
}

/**
 * What the strategy does after a status lookup: `settle` from the receipt found; `wait_lease` of an
 * attempt that may still be applying, then look up again; `ask_person` when nobody can tell (an
 * unknown never becomes a retry by itself); `release` the record and go back to a person's approval
 * when the write never runs again on a lookup alone; `give_up` when no run is left; else `run`.
 */
export function afterLookup(
  status: StatusLookup,
  memory: RoundMemory,
  traits: EffectTraits,
): { move: 'settle' | 'ask_person' | 'release' | 'give_up' | 'run' } | { move: 'wait_lease'; waitMs: number } {
  if (status.state === 'applied') return { move: 'settle' };
  const waitMs = leaseWait(status, memory.waitedOutLease);
  if (waitMs !== undefined) return { move: 'wait_lease', waitMs };
  if (status.state === 'unknown' && !memory.personSaidNotApplied) return { move: 'ask_person' };
  if (traits.retry === 'never') return { move: 'release' };
  return memory.runsLeft ? { move: 'run' } : { move: 'give_up' };
}

/**
 * What the strategy does after a run returned: `settle` with its result; `again` (a new round, its
 * lookup first) after a retryable failure, where the effect retries after a status check; or
 * `reconcile` (look up, then a person) when the boundary could not tell (the intent held by another
 * call, the store unreachable) and the write never runs again by itself.
 */
export function afterRun(ran: BoundaryResult, traits: EffectTraits): 'settle' | 'again' | 'reconcile' {
  if (traits.retry === 'after_status_check') return ran.result.status === 'error' && ran.result.retryable ? 'again' : 'settle';
  return ran.result.code === 'outcome_unknown' && traits.retry === 'never' ? 'reconcile' : 'settle';
}

/** Whether a write looks its intent up before its first run (a write retried only after a status check does; one approved once runs once). */
export function looksUpFirst(traits: EffectTraits): boolean {
  return traits.retry === 'after_status_check';
}

/** Whether a round after the first backs off before its lookup (bounded retries do; the reconciliation of a cut-off looks at once). */
export function backsOff(traits: EffectTraits): boolean {
  return traits.retry === 'after_status_check';
}
