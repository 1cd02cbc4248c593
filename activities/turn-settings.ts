import type { TurnSettings } from '../common/activity-types';
import { toMilliseconds } from '../common/duration';
import type { TurnLimits } from '../common/types';
import type { TollgateConfig } from '../config/config-schema';

/** The config's turn limits in the workflow's form (the schema fills in every default). */
export function limitsFromConfig(config: TollgateConfig): Required<TurnLimits> {
  const { deadline, ...counts } = config.limits;
  return { ...counts, deadlineMs: toMilliseconds(deadline) };
}

/**
 * The `turnSettings` local activity: what the worker's config says a turn runs under. A turn asks
 * once at its start, so the answer is recorded in its history and config limits apply to turns
 * started by any client (the Temporal CLI, another SDK), not only by TollgateClient.
 */
export function createTurnSettings(config: TollgateConfig) {
  const settings: TurnSettings = { limits: limitsFromConfig(config), approvals: { requireDigest: config.approvals.requireDigest } };
  return async function turnSettings(): Promise<TurnSettings> {
    return settings;
  };
}
