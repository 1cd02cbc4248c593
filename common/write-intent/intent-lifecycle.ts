import type { EffectTraits } from '../effects';

/**
 * Where one write intent stands. `absent`: never claimed. `claimed`: a claim holds it, its handler
 * not started yet. `started`: its handler runs (the store's `started` row, inside its lease).
 * `committed`: the handler's receipt is recorded. `released`: given up because nothing happened (the
 * handler never started, said so itself, or a status check or a person said "not applied"); it may
 * be claimed again. `unknown`: an attempt that ended without a verdict (cut off, crashed, its lease
 * run out): nobody knows whether it took effect. `resolved`: applied by someone else's word (the
 * tool's status check found it, or a person said so), recorded with that receipt.
 */
export type IntentState = 'absent' | 'claimed' | 'started' | 'committed' | 'released' | 'unknown' | 'resolved';

/** Who makes a move: the workflow's strategy, the boundary's executor (an activity), a person, a rule (the tool's status check), or a crash (a lease running out). */
export type IntentActor = 'strategy' | 'executor' | 'person' | 'rule' | 'crash';

/** One move an actor may make on an intent. */
export interface IntentMoveRule {
  actor: IntentActor;
  from: readonly IntentState[];
  to: IntentState;
  /** The effect traits that permit the move at all (every effect when left out). */
  permitted?: (traits: EffectTraits) => boolean;
  /** Whether the move proves the intent's last attempt did not apply (so a next execution is one, not a second). */
  proves?: true;
}

/** An intent's life so far: where it stands, how often its handler started, and whether that is proven not to have applied. */
export interface IntentLife {
  state: IntentState;
  executions: number;
  /** Since the last execution began, something proved it did not apply (always true before the first). */
  provenNotApplied: boolean;
}

const ATTEMPT: readonly IntentState[] = ['claimed', 'started'];
const NOT_COMMITTED: readonly IntentState[] = ['absent', 'claimed', 'started', 'released', 'unknown'];

/**
 * Every move of the write protocol: the store takes claims and commits (the claim rule decides
 * which), the executor runs the handler in between, a crash leaves an attempt unknown, and only a
 * status check or a person moves an unknown intent on. Nothing else moves an intent.
 */
export const INTENT_MOVES = {
  /** The executor claims an intent nobody holds. */
  claim: { actor: 'executor', from: ['absent', 'released'], to: 'claimed' },
  /** The executor claims an attempt whose lease ran out without a verdict: only where the effect allows it, and it may run only after a proof. */
  take_over: { actor: 'executor', from: ['unknown'], to: 'claimed', permitted: (traits) => traits.leaseTakeover },
  /** The executor replaces a receipt the tool's status check proved stale (the world changed back): a proof must come first. */
  supersede: { actor: 'executor', from: ['committed', 'resolved'], to: 'claimed', permitted: (traits) => traits.receiptRechecked },
  /** The executor starts the handler under its own claim. */
  start: { actor: 'executor', from: ['claimed'], to: 'started' },
  /** The executor records the handler's receipt; only its own claim's record takes it. */
  commit: { actor: 'executor', from: ['started'], to: 'committed' },
  /** The executor gives the claim up: the handler never started, or said itself that it did nothing. */
  release: { actor: 'executor', from: ATTEMPT, to: 'released', proves: true },
  /** The executor ends the lease of a handler that threw without a verdict. */
  end_lease: { actor: 'executor', from: ['started'], to: 'unknown' },
  /** A worker crashed, or the attempt outlived its lease. */
  expire: { actor: 'crash', from: ATTEMPT, to: 'unknown' },
  /** The tool's status check found the intent applied: its receipt is recorded. */
  found_applied: { actor: 'rule', from: NOT_COMMITTED, to: 'resolved' },
  /** The tool's status check found it not applied: proof for the next execution, the record left as it is. */
  found_not_applied: {
    actor: 'rule',
    from: ['absent', 'claimed', 'released', 'unknown', 'committed', 'resolved'],
    to: 'same',
    proves: true,
  },
  /** The strategy gives up the record its status check found not applied (a write that never retries goes back to a person). */
  release_not_applied: { actor: 'strategy', from: ['unknown', 'released'], to: 'released', proves: true },
  /** A person says an unknown intent took effect. */
  resolve_applied: { actor: 'person', from: ['unknown'], to: 'resolved' },
  /** A person says it did not: the record is given up. */
  resolve_not_applied: { actor: 'person', from: ['unknown', 'released'], to: 'released', proves: true },
} as const satisfies Record<string, Omit<IntentMoveRule, 'to'> & { to: IntentState | 'same' }>;

/** The name of one move of the write protocol. */
export type IntentMove = keyof typeof INTENT_MOVES;

/** The life of an intent nobody claimed yet. */
export const NEW_INTENT: IntentLife = { state: 'absent', executions: 0, provenNotApplied: true };

/** The result of a move: the intent's next life, or why the protocol refuses it. */
export type MoveResult = { allowed: true; life: IntentLife } | { allowed: false; why: string };

/**
 * Makes one move on an intent, under its effect's traits. A start is refused unless it is the
 * first, or a proof came since the last one began: no intent executes twice unless something showed
 * the first did not apply, and an unknown never becomes a retry by itself.
 */
export function moveIntent(life: IntentLife, move: IntentMove, traits: EffectTraits): MoveResult {
  const rule: Omit<IntentMoveRule, 'to'> & { to: IntentState | 'same' } = INTENT_MOVES[move];
  if (rule.permitted && !rule.permitted(traits)) return { allowed: false, why: `${move} is not permitted for a ${traits.label}` };
  if (!rule.from.includes(life.state))
    return { allowed: false, why: `${move} (${rule.actor}) cannot move an intent that is ${life.state}` };
  if (move === 'start' && life.executions > 0 && !life.provenNotApplied)
    return { allowed: false, why: `a second execution with no proof that execution ${life.executions} did not apply` };
  const state = rule.to === 'same' ? life.state : rule.to;
  if (move === 'start') return { allowed: true, life: { state, executions: life.executions + 1, provenNotApplied: false } };
  return { allowed: true, life: { state, executions: life.executions, provenNotApplied: life.provenNotApplied || rule.proves === true } };
}
