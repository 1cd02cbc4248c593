import type { ToolEffect } from './codes';

/**
 * What one effect level means, as data: every layer that treats effects differently (the tool
 * declarations, the registry, the workflow's strategies, the boundary's executors, the intent
 * stores, the metrics, the config and the tool sources' mappings) reads it here rather than
 * comparing effect names.
 */
export interface EffectTraits {
  /** How the effect is written for people (tables, the Web UI, the inbox). */
  label: string;
  /**
   * What may run a call again: `bounded` (Temporal retries within the tool's maxAttempts, timeouts
   * included), `after_status_check` (only once the tool's status check says "not applied"), or
   * `never` (a person decides).
   */
  retry: 'bounded' | 'after_status_check' | 'never';
  /** Whether a declaration must (`required`), may (`optional`) or may not (`none`) carry a status check. */
  statusCheck: 'required' | 'optional' | 'none';
  /** Whether each call is recorded as an intent (claimed before the handler, committed with its receipt after it). */
  claimsIntent: boolean;
  /** Whether each call waits for a decision (a person's) before it runs. */
  needsApproval: boolean;
  /** Whether a started attempt whose lease ran out may be claimed by another call (after the tool's own status check). */
  leaseTakeover: boolean;
  /** Whether a committed receipt answers a repeat only while the tool's status check still agrees (the world may have changed back). */
  receiptRechecked: boolean;
  /** Whether an approved call carries a schedule-to-start bound (config `approvals.scheduleToStart`): approved long ago, never run late. */
  scheduleToStartBound: boolean;
  /** Whether calls of one model step run at the same time (reads), or one after another in the model's order. */
  concurrentInStep: boolean;
}

/**
 * Every effect level's traits. A new level in `ToolEffect` does not compile until it has an entry
 * here, a strategy in `workflows/effects/index.ts` and an executor in `activities/boundary/run-tool.ts`.
 */
export const EFFECT_TRAITS = {
  read: {
    label: 'read',
    retry: 'bounded',
    statusCheck: 'none',
    claimsIntent: false,
    needsApproval: false,
    leaseTakeover: false,
    receiptRechecked: false,
    scheduleToStartBound: false,
    concurrentInStep: true,
  },
  reversible_write: {
    label: 'reversible write',
    retry: 'after_status_check',
    statusCheck: 'required',
    claimsIntent: true,
    needsApproval: false,
    leaseTakeover: true,
    receiptRechecked: true,
    scheduleToStartBound: false,
    concurrentInStep: false,
  },
  irreversible_write: {
    label: 'irreversible write',
    retry: 'never',
    statusCheck: 'optional',
    claimsIntent: true,
    needsApproval: true,
    leaseTakeover: false,
    receiptRechecked: false,
    scheduleToStartBound: true,
    concurrentInStep: false,
  },
} as const satisfies Record<ToolEffect, EffectTraits>;

type Traits = typeof EFFECT_TRAITS;

/** The effect levels whose calls are recorded as intents in the idempotency store. */
export type WriteEffect = { [E in ToolEffect]: Traits[E]['claimsIntent'] extends true ? E : never }[ToolEffect];

/** The effect levels whose declaration must carry a status check. */
export type StatusRequiredEffect = { [E in ToolEffect]: Traits[E]['statusCheck'] extends 'required' ? E : never }[ToolEffect];

/** The effect levels whose declaration may not carry a status check. */
export type StatusForbiddenEffect = { [E in ToolEffect]: Traits[E]['statusCheck'] extends 'none' ? E : never }[ToolEffect];

/** The effect levels a tool without a status check can have (what a source that has none, such as MCP, maps its tools into). */
export type EffectWithoutStatusCheck = Exclude<ToolEffect, StatusRequiredEffect>;

/** The effect levels a tool without a status check can have, as a list (for config schemas). */
export const EFFECTS_WITHOUT_STATUS_CHECK = (Object.keys(EFFECT_TRAITS) as ToolEffect[]).filter(
  (effect) => EFFECT_TRAITS[effect].statusCheck !== 'required',
) as [EffectWithoutStatusCheck, ...EffectWithoutStatusCheck[]];

/** The traits of one effect level. */
export function effectTraits(effect: ToolEffect): EffectTraits {
  return EFFECT_TRAITS[effect];
}

/** Every effect level with the given trait, in `TOOL_EFFECTS` order (e.g. the writes: `effectsWhere((t) => t.claimsIntent)`). */
export function effectsWhere(predicate: (traits: EffectTraits) => boolean): ToolEffect[] {
  return (Object.keys(EFFECT_TRAITS) as ToolEffect[]).filter((effect) => predicate(EFFECT_TRAITS[effect]));
}

/** Whether a value names an effect whose calls are recorded as intents. */
export function isWriteEffect(effect: unknown): effect is WriteEffect {
  return typeof effect === 'string' && Object.hasOwn(EFFECT_TRAITS, effect) && EFFECT_TRAITS[effect as ToolEffect].claimsIntent;
}
