import { ApplicationFailure, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities, AgentTurnSettings } from '../../common/activity-types';
import type { TurnSettings } from '../../common/activity-types';
import type { ResolvedTurnLimits, TurnLimits } from '../../common/contract/turn';
import { approversOf, type ApproverGroups } from '../../common/approver-groups';
import { FAILURE_TYPE } from '../../common/failures';
import type { Signing } from '../decisions/desk';
import type { NotifySettings } from '../../common/contract/notifications';
import type { StandInStatement } from '../../common/stand-in';

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
  /** A subagent's turn: the approver groups of the agents above it, each of which a decider must pass too. */
  aboveGroups?: ApproverGroups[];
  /** Whether irreversible calls are first put to the worker's approval rules and grants (`decideByPolicy`). */
  policies: boolean;
  streams: StreamSettings;
  metrics: boolean;
  outcomes: TurnSettings['outcomes'];
  /** The turn's agent as the worker declared it at the turn's start (left out for the default agent). */
  agent?: AgentTurnSettings;
  /** Who is told of the turn's waits (config `approvals.notify`); left out when nobody is. */
  notify?: NotifySettings;
  /** Stand-ins' statements, signed by the approvers who named them (with signing on); left out when there are none. */
  standIns?: StandInStatement[];
}

/**
 * What a turn runs under: the worker's config (asked once at the turn's start, so it is recorded in
 * history), its limits lowered or raised by the turn's own, and whether decisions must name their
 * digest and be signed. A turn naming an agent gets the agent's limits over the config's (its own
 * may only lower those) and the agent's approver groups on top of the worker's; an agent the worker
 * does not declare fails the turn at once with `invalid_input`, naming the agents it does.
 */
export async function settingsFor({
  limits: own,
  agent: named,
  lowerOnly = false,
  above = [],
}: {
  limits?: TurnLimits;
  agent?: string;
  /** A subagent's turn: the agents above it on its lineage path, whose approver groups apply to it too. */
  above?: string[];
  /** A subagent's turn: its limits (a share of its parent's) only lower its agent's and the config's, never raise them. */
  lowerOnly?: boolean;
}): Promise<TurnRunSettings> {
  // The default agent asks as turns always did, so their recorded histories replay unchanged.
  const asked = { ...(named !== undefined ? { agent: named } : {}), ...(above.length > 0 ? { above } : {}) };
  const settings = Object.keys(asked).length === 0 ? await turnSettings() : await turnSettings(asked);
  if (settings.unknownAgent) {
    const { name, known } = settings.unknownAgent;
    throw ApplicationFailure.create({
      type: FAILURE_TYPE.invalid_input,
      message: `agentTurn input: agent "${name}" is not declared on the worker (${known.length > 0 ? `known: ${known.join(', ')}` : 'it declares no agents'})`,
      nonRetryable: true,
    });
  }
  const { agent } = settings;
  const { requireDigest, publicKeys, signatureMaxAgeMs, policies = false } = settings.approvals;
  const signing = publicKeys ? { publicKeys, maxAgeMs: signatureMaxAgeMs ?? 0 } : undefined;
  const limits = lowerOnly
    ? lowered(agent ? agentLimits(settings.limits, agent.limits) : settings.limits, own)
    : agent
      ? agentLimits(settings.limits, agent.limits, own)
      : { ...settings.limits, ...own };
  const groups = agent?.groups ? withAgentGroups(settings.approvals.groups, agent.groups) : settings.approvals.groups;
  const metrics = settings.telemetry?.metrics ?? false;
  return {
    limits,
    requireDigest,
    signing,
    groups,
    ...(settings.aboveGroups ? { aboveGroups: settings.aboveGroups } : {}),
    policies,
    streams: settings.interruptedStreams,
    metrics,
    outcomes: settings.outcomes,
    ...(agent ? { agent } : {}),
    ...(settings.approvals.notify && settings.approvals.notify.routes.length > 0 ? { notify: settings.approvals.notify } : {}),
    ...(settings.approvals.standIns?.length ? { standIns: settings.approvals.standIns } : {}),
  };
}

/** An agent's limits over the config's; a turn's own limit lowers the agent's, never raises it past it. */
function agentLimits(config: ResolvedTurnLimits, agent: TurnLimits = {}, own: TurnLimits = {}): ResolvedTurnLimits {
  const limits: ResolvedTurnLimits = { ...config, ...agent };
  for (const [key, value] of Object.entries(own) as Array<[keyof TurnLimits, number]>) {
    const bound = agent[key];
    limits[key] = bound === undefined ? value : Math.min(bound, value);
  }
  return limits;
}

/** Limits lowered by another set: each the smaller of the two (a limit the first leaves out is the second's). */
function lowered(limits: ResolvedTurnLimits, by: TurnLimits = {}): ResolvedTurnLimits {
  const result: ResolvedTurnLimits = { ...limits };
  for (const [key, value] of Object.entries(by) as Array<[keyof TurnLimits, number]>) {
    const bound = limits[key];
    result[key] = bound === undefined ? value : Math.min(bound, value);
  }
  return result;
}

/**
 * The worker's approver groups with an agent's on top: a tool the agent's groups name may be decided
 * only by approvers its entry lists and the worker's groups also allow for that tool.
 */
export function withAgentGroups(worker: ApproverGroups | undefined, agent: ApproverGroups): ApproverGroups {
  const merged: ApproverGroups = { ...worker };
  for (const [tool, approvers] of Object.entries(agent)) {
    const allowed = approversOf(worker, tool);
    merged[tool] = allowed === undefined ? [...approvers] : approvers.filter((approver) => allowed.includes(approver));
  }
  return merged;
}

/** The turn's token budget: the smaller of its limit and its conversation's allowance, when either is set. */
export function tokenBudgetOf(limits: ResolvedTurnLimits, allowance: number | undefined): number | undefined {
  const bounds = [limits.maxTokens, allowance].filter((bound): bound is number => bound !== undefined);
  return bounds.length === 0 ? undefined : Math.min(...bounds);
}
