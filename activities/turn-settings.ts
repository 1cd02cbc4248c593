import type { TurnSettings } from '../common/activity-types';
import { approverPublicKeysFromEnvironment } from '../common/approver-keys';
import { toMilliseconds } from '../common/duration';
import type { ResolvedTurnLimits } from '../common/contract/turn';
import type { TollgateConfig } from '../config/config-schema';

/** The config's turn limits in the workflow's form (the schema fills in every default; a token budget only when set). */
export function limitsFromConfig(config: TollgateConfig): ResolvedTurnLimits {
  const { maxSteps, maxToolCalls, errorBudget, deadline, maxHistoryEvents, maxHistoryBytes, maxTokens } = config.limits;
  const counts = { maxSteps, maxToolCalls, errorBudget, maxHistoryEvents, maxHistoryBytes };
  return { ...counts, deadlineMs: toMilliseconds(deadline), ...(maxTokens === undefined ? {} : { maxTokens }) };
}

/**
 * The `turnSettings` local activity: what the worker's config says a turn runs under. A turn asks
 * once at its start, so the answer is recorded in its history and config limits apply to turns
 * started by any client (the Temporal CLI, another SDK), not only by TollgateClient. Approver public
 * keys travel with the settings (they are not secret), so each turn keeps the keys it started with.
 */
export function createTurnSettings(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env) {
  // Read once, when the worker starts: a missing or malformed key list stops the worker with its error.
  const publicKeys = approverPublicKeysFromEnvironment(config.approvals.publicKeysEnv, env);
  const signing = publicKeys ? { publicKeys, signatureMaxAgeMs: toMilliseconds(config.approvals.signatureMaxAge) } : {};
  const settings: TurnSettings = {
    limits: limitsFromConfig(config),
    ...(config.limits.maxConversationTokens === undefined ? {} : { conversationMaxTokens: config.limits.maxConversationTokens }),
    approvals: {
      requireDigest: config.approvals.requireDigest,
      ...signing,
      ...(Object.keys(config.approvals.groups).length > 0 ? { groups: config.approvals.groups } : {}),
      policies: true,
    },
    interruptedStreams: {
      onInterruptedStream: config.model.onInterruptedStream,
      resumeTimeoutMs: toMilliseconds(config.model.resumeTimeout),
      heartbeatTimeoutMs: toMilliseconds(config.model.heartbeatTimeout),
    },
    ...(config.telemetry.prometheus ? { telemetry: { metrics: true } } : {}),
    outcomes: { onUnknown: config.outcomes.onUnknown, resolveTimeoutMs: toMilliseconds(config.outcomes.resolveTimeout) },
  };
  return async function turnSettings(): Promise<TurnSettings> {
    return settings;
  };
}
