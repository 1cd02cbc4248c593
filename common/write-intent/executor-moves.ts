import type { EffectTraits } from '../effects';
import { inFlight } from './claim-rule';
import type { IntentRecord } from './intent-record';

/** What the executor knows of the tool it runs, beyond the effect's traits. */
export interface ExecutorTool {
  traits: EffectTraits;
  /** Whether the tool declares its own status check. */
  hasStatusCheck: boolean;
}

/**
 * Whether the tool's own status check may settle what the store cannot (a receipt the world no
 * longer holds, an attempt nobody confirmed): only where a write may run again after a check.
 */
export function statusSettles({ traits, hasStatusCheck }: ExecutorTool): boolean {
  return traits.retry === 'after_status_check' && hasStatusCheck;
}

/**
 * What the executor does with a claim the store refused, given the record that holds the intent:
 * `recheck` a receipt that answers only while the check agrees (the world may have changed back:
 * X, then Y, then X again), answer from the `receipt`, ask the status `check`, or answer `unknown`
 * (someone else's attempt, in flight or never confirmed: never run a second time).
 */
export function refusedClaimMove(
  record: IntentRecord,
  tool: ExecutorTool,
  rechecked: boolean,
): 'recheck' | 'receipt' | 'check' | 'unknown' {
  if (record.state === 'committed' && record.owner && !rechecked && tool.traits.receiptRechecked && statusSettles(tool)) return 'recheck';
  if (record.state === 'committed' && record.receipt) return 'receipt';
  return statusSettles(tool) ? 'check' : 'unknown';
}

/** Why a refused claim's intent is not run: another call's attempt still in flight, or one that was never confirmed. */
export function unknownHolder(record: IntentRecord, now: number): 'in_flight' | 'unconfirmed' {
  return inFlight(record, now) ? 'in_flight' : 'unconfirmed';
}

/**
 * Whether a won claim needs a proof before its handler runs: it took over another call's attempt
 * whose lease ran out (only the tool's check may let it run again), or a claim try lost its answer
 * (that try may have taken over a record this one cannot see: this one finds only its own). A retry
 * of the same call follows the workflow's own status lookup, which just asked.
 */
export function proofBeforeRun(
  claim: { replaced?: Pick<IntentRecord, 'state' | 'callId'> },
  { callId, claimTryFailed, tool }: { callId: string; claimTryFailed: boolean; tool: ExecutorTool },
): boolean {
  const replacedOther = claim.replaced?.state === 'started' && claim.replaced.callId !== callId;
  const foundOnlyItsOwn = !claim.replaced || claim.replaced.callId === callId;
  return replacedOther || (claimTryFailed && foundOnlyItsOwn && statusSettles(tool));
}

/** How a started handler ended, as the executor records it: `commit` its receipt, `release` (it said it did nothing), `end_lease` (it threw without a verdict, and has stopped), or `keep` (cut off by its timeout: it may still be applying). */
export function handlerEndMove(end: {
  interrupted: boolean;
  timedOut: boolean;
  success: boolean;
}): 'commit' | 'release' | 'end_lease' | 'keep' {
  if (end.interrupted) return end.timedOut ? 'keep' : 'end_lease';
  return end.success ? 'commit' : 'release';
}
