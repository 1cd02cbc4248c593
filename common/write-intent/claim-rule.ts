import type { StatusLookup } from '../activity-types';
import { EFFECT_TRAITS, isWriteEffect } from '../effects';
import type { IntentRecord } from './intent-record';

/** What a store holds of an intent when a claim finds it, as its lock sees it. */
export interface HeldIntent {
  state: 'started' | 'committed';
  /** The effect it was claimed under (anything else, an old row's null included, is never taken over). */
  effect: unknown;
  owner?: string | null;
  /** When its lease ends, in milliseconds since the epoch (none: never). */
  leaseUntilMs?: number | null;
}

/** What a claim asks beyond the intent: its effect, its own token, and the stale receipt it may replace. */
export interface ClaimAsk {
  /** The effect the claimant runs the call under: only one whose receipts are rechecked may supersede one. */
  effect: unknown;
  owner?: string;
  supersede?: string;
}

/**
 * What a claim does with the record that holds its intent (both stores decide alike, inside their
 * lock): `own` when it is the claimant's own started claim (same token) still inside its lease;
 * `take_over` when it is an attempt whose lease ran out and whose effect allows taking over (the
 * claimant's own included: its lease is renewed, so nobody else takes it over meanwhile), or the
 * stale committed record the request supersedes, under an effect whose receipts are rechecked;
 * `refuse` otherwise (an irreversible attempt is never taken over, its receipt never replaced).
 */
export function claimRule(held: HeldIntent, ask: ClaimAsk, now: number): 'own' | 'take_over' | 'refuse' {
  const leaseExpired =
    held.state === 'started' &&
    isWriteEffect(held.effect) &&
    EFFECT_TRAITS[held.effect].leaseTakeover &&
    held.leaseUntilMs !== null &&
    held.leaseUntilMs !== undefined &&
    held.leaseUntilMs <= now;
  if (held.state === 'started' && ask.owner !== undefined && held.owner === ask.owner) return leaseExpired ? 'take_over' : 'own';
  const stale =
    held.state === 'committed' &&
    isWriteEffect(ask.effect) &&
    EFFECT_TRAITS[ask.effect].receiptRechecked &&
    ask.supersede !== undefined &&
    ask.supersede === held.owner;
  return leaseExpired || stale ? 'take_over' : 'refuse';
}

/** Whether a started attempt may still be applying: its lease (the call's timeout plus the store's grace) has not run out. */
export function inFlight(record: IntentRecord | undefined, now: number): boolean {
  return record?.state === 'started' && record.leaseExpiresAt !== undefined && Date.parse(record.leaseExpiresAt) > now;
}

/**
 * How long to wait before looking up again, when a lookup found an attempt still in flight and this
 * call has not waited yet: the attempt's lease ends first, so the next lookup may tell.
 */
export function leaseWait(status: StatusLookup, waitedAlready: boolean): number | undefined {
  if (status.state !== 'unknown' || status.inFlightForMs === undefined || waitedAlready) return undefined;
  return status.inFlightForMs + 1_000;
}
