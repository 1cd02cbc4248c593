import { EFFECT_TRAITS } from '../../common/effects';
import { approvalGate, openGate } from './approval-gate';
import type { EffectStrategy } from './effect-strategy';
import { runWriteRounds } from './write-rounds';

/**
 * Both write effects, by their traits: `reversible_write` looks its intent up before every run
 * (applied → success from the receipt; not applied → one run; cut off → back off and look again;
 * cannot tell → a person's resolution, or `outcome_unknown`), at most the tool's maxAttempts runs
 * plus one per `not_applied` from a person. `irreversible_write` waits for a decision (rules and
 * grants, then a person under a durable timer) and runs once; cut off, or reported
 * `outcome_unknown` → its status lookup: applied → success from what it found; not applied → back to
 * approval (it never runs again without a new decision); cannot tell → a person's resolution.
 * A call that needs approval (`needsApproval`) waits for it before it runs, whatever its effect.
 */
export const writeStrategy: EffectStrategy = {
  run(context) {
    const needsApproval = context.call.needsApproval ?? EFFECT_TRAITS[context.call.policy.effect].needsApproval;
    return runWriteRounds(context, needsApproval ? approvalGate(context) : openGate(context.call));
  },
};
