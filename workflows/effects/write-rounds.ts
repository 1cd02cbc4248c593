import { patched, sleep } from '@temporalio/workflow';
import type { BoundaryResult, StatusLookup } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { EFFECT_TRAITS, type EffectTraits } from '../../common/effects';
import { answerRepeat, repeatOf } from '../../common/write-intent/repeat';
import { afterLookup, afterRun, backsOff, looksUpFirst } from '../../common/write-intent/strategy-moves';
import { releaseNotApplied, resolveUnknown } from '../decisions/unknown-outcome';
import { interruption, neverStarted } from './activity-results';
import type { ApprovalGate } from './approval-gate';
import { runToolInput, type EffectContext } from './effect-strategy';
import { lookupActivity, writeActivity } from './write-activities';

/** The backoff before round `round` (1 for the first retry). */
function backoffMs(retry: { initialIntervalMs: number; backoffCoefficient: number; maximumIntervalMs: number }, round: number): number {
  return Math.min(retry.initialIntervalMs * retry.backoffCoefficient ** (round - 1), retry.maximumIntervalMs);
}

/** The patch that asks the store for a repeat before a person is asked (turns recorded before it replay without it). */
export const REPEAT_BEFORE_APPROVAL = 'tollgate-repeat-before-approval';

/** What the rounds of one call keep between them. */
interface Rounds {
  traits: EffectTraits;
  gate: ApprovalGate;
  round: number;
  executions: number;
  lastProblem: string;
  /** Runs a person's `not_applied` added. */
  granted: number;
  personSaidNotApplied: boolean;
  waitedOutLease: boolean;
  approved: boolean;
  /** What the latest lookup found: results after one say so (traces), where every run follows a lookup. */
  found?: StatusLookup['state'];
}

/** A result as the call settles with it. */
function settled(rounds: Rounds, outcome: BoundaryResult): BoundaryResult {
  const { traits, gate, found } = rounds;
  return gate.shown(looksUpFirst(traits) && found ? { ...outcome, statusLookup: found } : outcome);
}

/**
 * A round's status lookup and what follows from it: the call's result (applied, a person's word,
 * no run left), `again` (a new round: after a lease waited out, or a person's `not_applied` on a
 * write that looks again), or `run`.
 */
async function lookupRound(context: EffectContext, rounds: Rounds): Promise<BoundaryResult | 'again' | 'run'> {
  const { taskId, call, resolutions } = context;
  const { traits, gate } = rounds;
  const { policy } = call;
  if (rounds.round > 0 && backsOff(traits)) await sleep(backoffMs(policy.retry, rounds.round));
  const runnable = gate.runnable();
  const lookup = { taskId, callId: runnable.callId, tool: runnable.tool, args: runnable.args };
  const status = await lookupActivity(runnable)(rounds.executions === 0 ? { ...lookup, beforeFirstRun: true } : lookup);
  rounds.found = status.state;
  const runsLeft = rounds.round < policy.maxAttempts + rounds.granted;
  const next = afterLookup(status, { ...rounds, runsLeft }, traits);
  if (status.state === 'applied') {
    const of = repeatOf(status, call.callId);
    return settled(
      rounds,
      of ? answerRepeat(status.receipt, of, rounds.executions) : BoundaryResults.fromReceipt(status.receipt, rounds.executions),
    );
  }
  if (next.move === 'wait_lease') {
    // An attempt may still be applying: its lease ends first, then the lookup asks again (no run in between).
    rounds.waitedOutLease = true;
    await sleep(next.waitMs);
    rounds.round--;
    return 'again';
  }
  if (next.move === 'ask_person' && status.state === 'unknown') {
    const reason = traits.retry === 'never' ? `${rounds.lastProblem}; ${status.reason}` : `${call.tool}: ${status.reason}`;
    const reconciled = await resolveUnknown({ taskId, call: runnable, resolutions }, reason, rounds.executions);
    if (reconciled.verdict === 'settled') return settled(rounds, reconciled.outcome);
    rounds.granted++;
    rounds.personSaidNotApplied = true;
    // A write retried after a status check looks again (a person's word counts where it still cannot tell).
    if (traits.retry !== 'never') return 'again';
  }
  rounds.personSaidNotApplied = false;
  if (next.move === 'release') await releaseNotApplied({ taskId, call: runnable });
  if (next.move === 'give_up') {
    const message = `${call.tool} did not complete in ${rounds.round} attempts: ${rounds.lastProblem}`;
    return settled(rounds, BoundaryResults.failure('transient_failure', message, { executions: rounds.executions }));
  }
  if (traits.retry === 'never') {
    // Not applied, by the lookup or a person: it runs again only on a new decision.
    gate.forget();
    rounds.approved = false;
  }
  return 'run';
}

/**
 * The one loop of a write's rounds, both write effects alike, the moves each round makes read from
 * the write protocol (`common/write-intent/`) under the effect's traits. A round: the intent's
 * status lookup (before every run of a write retried after a status check; after a cut-off for any),
 * then the gate (a person's approval where the call needs one: again before every run of a write
 * that never retries), then one run. Applied → the receipt; in flight → its lease waited out once,
 * then another lookup; cannot tell → a person's resolution, never a retry by itself.
 */
export async function runWriteRounds(context: EffectContext, gate: ApprovalGate): Promise<BoundaryResult> {
  const { taskId, call, allowedTools } = context;
  const traits = EFFECT_TRAITS[call.policy.effect];
  const rounds: Rounds = {
    traits,
    gate,
    round: 0,
    executions: 0,
    lastProblem: 'not attempted',
    granted: 0,
    personSaidNotApplied: false,
    waitedOutLease: false,
    approved: false,
  };
  let lookUp = looksUpFirst(traits);
  if (!lookUp && gate.waits && patched(REPEAT_BEFORE_APPROVAL)) {
    // A call that waits for a person is first asked of the store: a repeat of one already applied in the task runs nothing, so nobody is asked.
    const status = await lookupActivity(call)({ taskId, callId: call.callId, tool: call.tool, args: call.args, receiptOnly: true });
    const of = repeatOf(status, call.callId);
    if (of && status.state === 'applied') return answerRepeat(status.receipt, of, 0);
  }
  for (; ; rounds.round++) {
    if (lookUp) {
      const next = await lookupRound(context, rounds);
      if (next === 'again') continue;
      if (next !== 'run') return next;
    }
    if (!rounds.approved) {
      const refused = await gate.pass(rounds.executions);
      if (refused) return refused;
      rounds.approved = true;
      rounds.waitedOutLease &&= traits.retry !== 'never';
    }
    const running = gate.runnable();
    lookUp = true;
    let ran: BoundaryResult;
    try {
      ran = await writeActivity(running)(runToolInput({ taskId, call: running, allowedTools }));
    } catch (error) {
      if (neverStarted(error)) {
        const message = `${call.tool} was approved, but no worker started it within ${call.policy.scheduleToStartMs! / 1000} s; it did not run`;
        return gate.shown({ ...BoundaryResults.failure('not_run', message, { retryable: false }), executions: rounds.executions });
      }
      rounds.executions += 1;
      rounds.lastProblem =
        traits.retry === 'never' ? `${call.tool} was cut off and is not run again: ${interruption(error)}` : interruption(error);
      continue;
    }
    rounds.executions += ran.executions > 0 ? 1 : 0;
    const next = afterRun(ran, traits);
    if (next === 'settle') return settled(rounds, { ...ran, executions: rounds.executions });
    rounds.lastProblem = ran.result.message ?? (next === 'reconcile' ? `${call.tool}: outcome unknown` : (ran.result.code ?? 'error'));
  }
}
