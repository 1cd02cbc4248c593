import type { ToolEffect } from '../../common/codes';
import type { EffectStrategy } from './effect-strategy';
import { readStrategy } from './read';
import { writeStrategy } from './write';

/** One strategy per effect level: a new level in ToolEffect does not compile until it has one here. */
export const EFFECT_STRATEGIES: Record<ToolEffect, EffectStrategy> = {
  read: readStrategy,
  reversible_write: writeStrategy,
  irreversible_write: writeStrategy,
};

export type { EffectContext, EffectStrategy, RunnableCall } from './effect-strategy';
