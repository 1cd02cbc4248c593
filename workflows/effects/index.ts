import type { ToolEffect } from '../../common/codes';
import type { EffectStrategy } from './effect-strategy';
import { irreversibleWriteStrategy } from './irreversible-write';
import { readStrategy } from './read';
import { reversibleWriteStrategy } from './reversible-write';

/** One strategy per effect level: a new level in ToolEffect does not compile until it has one here. */
export const EFFECT_STRATEGIES: Record<ToolEffect, EffectStrategy> = {
  read: readStrategy,
  reversible_write: reversibleWriteStrategy,
  irreversible_write: irreversibleWriteStrategy,
};

export type { EffectContext, EffectStrategy, RunnableCall } from './effect-strategy';
