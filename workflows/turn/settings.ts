import { proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../common/activity-types';
import type { TurnSettings } from '../../common/activity-types';
import type { ResolvedTurnLimits, TurnLimits } from '../../common/contract/turn';
import type { ApproverGroups } from '../../common/approver-groups';
import type { Signing } from '../decisions/desk';

/** What a turn does with a stream cut off after chunks went out. */
export type StreamSettings = Required<TurnSettings>['interruptedStreams'];

const { turnSettings } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  summary: 'turn settings',
  retry: { maximumAttempts: 5 },
});

/** The settings a turn runs under. */
export interface TurnRunSettings {
  limits: ResolvedTurnLimits;
  requireDigest: boolean;
  signing?: Signing;
  /** Who may decide on which tool's calls (config `approvals.groups`). */
  groups?: ApproverGroups;
  /** Whether irreversible calls are first put to the worker's approval rules and grants (`decideByPolicy`). */
  policies: boolean;
  streams: StreamSettings;
  metrics: boolean;
  outcomes: TurnSettings['outcomes'];
}

/**
 * What a turn runs under: the worker's config (asked once at the turn's start, so it is recorded in
 * history), its limits lowered or raised by the turn's own, and whether decisions must name their
 * digest and be signed.
 */
export async function settingsFor(own: TurnLimits | undefined): Promise<TurnRunSettings> {
  const settings = await turnSettings();
  const { requireDigest, publicKeys, signatureMaxAgeMs, groups, policies = false } = settings.approvals;
  const signing = publicKeys ? { publicKeys, maxAgeMs: signatureMaxAgeMs ?? 0 } : undefined;
  const limits = { ...settings.limits, ...own };
  const metrics = settings.telemetry?.metrics ?? false;
  return { limits, requireDigest, signing, groups, policies, streams: settings.interruptedStreams, metrics, outcomes: settings.outcomes };
}

/** The turn's token budget: the smaller of its limit and its conversation's allowance, when either is set. */
export function tokenBudgetOf(limits: ResolvedTurnLimits, allowance: number | undefined): number | undefined {
  const bounds = [limits.maxTokens, allowance].filter((bound): bound is number => bound !== undefined);
  return bounds.length === 0 ? undefined : Math.min(...bounds);
}
