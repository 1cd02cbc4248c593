import type { AgentTurnSettings, TurnSettings, TurnSettingsInput } from '../common/activity-types';
import type { AgentRegistry } from '../agents/agent-registry';
import type { AgentDefinition } from '../agents/define-agent';
import { approverPublicKeysFromEnvironment } from '../common/approver-keys';
import { toMilliseconds } from '../common/duration';
import type { ResolvedTurnLimits } from '../common/contract/turn';
import type { TollgateConfig } from '../config/config-schema';
import { notifySettingsOf } from './notify-settings';
import { readStandIns } from '../policies/stand-in-file';
import type { StandInStatement } from '../common/stand-in';

/** Settings with the stand-ins' statements in their approvals. */
const withStandIns = (settings: TurnSettings, standIns: StandInStatement[]): TurnSettings => ({
  ...settings,
  approvals: { ...settings.approvals, standIns },
});

/** The settings' `notify` key, present only when routes are set (the settings of turns without it stay as they were). */
const notifyOf = (notify: ReturnType<typeof notifySettingsOf>) => (notify ? { notify } : {});

/** The config's turn limits in the workflow's form (the schema fills in every default; a token budget only when set). */
export function limitsFromConfig(config: TollgateConfig): ResolvedTurnLimits {
  const { maxSteps, maxToolCalls, errorBudget, deadline, maxHistoryEvents, maxHistoryBytes, maxTokens } = config.limits;
  const { maxDepth, maxConcurrentSubagents, maxHandoffs } = config.limits;
  const counts = { maxSteps, maxToolCalls, errorBudget, maxHistoryEvents, maxHistoryBytes, maxDepth, maxConcurrentSubagents, maxHandoffs };
  return { ...counts, deadlineMs: toMilliseconds(deadline), ...(maxTokens === undefined ? {} : { maxTokens }) };
}

/** What a turn needs of its agent, as data recorded in its settings (the instructions and schema stay on the worker). */
export function agentTurnSettings(agent: AgentDefinition, agents?: AgentRegistry): AgentTurnSettings {
  const { name, digest, tools, limits, model, instructions, output, outputRetries, approvals } = agent;
  return {
    name,
    digest,
    ...(tools ? { tools: [...tools] } : {}),
    ...(limits ? { limits: { ...limits } } : {}),
    ...(model ? { model } : {}),
    instructions: typeof instructions === 'function' ? 'function' : instructions === undefined ? 'none' : 'text',
    output: output !== undefined,
    outputRetries,
    ...(approvals?.groups && Object.keys(approvals.groups).length > 0 ? { groups: approvals.groups } : {}),
    ...(agent.handoffs ? { handoffs: handoffReferences(agent.handoffs, agents) } : {}),
  };
}

/** The handoff targets as this worker declares them (the registry checked each is one of its agents). */
function handoffReferences(names: string[], agents: AgentRegistry | undefined): AgentTurnSettings['handoffs'] {
  return names.flatMap((name) => {
    const target = agents?.get(name);
    return target ? [{ name, digest: target.digest }] : [];
  });
}

/**
 * The `turnSettings` local activity: what the worker's config says a turn runs under. A turn asks
 * once at its start, so the answer is recorded in its history and config limits apply to turns
 * started by any client (the Temporal CLI, another SDK), not only by TollgateClient. Approver public
 * keys travel with the settings (they are not secret), so each turn keeps the keys it started with.
 * A turn that names an agent gets the agent as this worker declares it (its name, digest, tools,
 * limits, model and output bound), or the names of the agents it knows when it declares none such.
 */
export function createTurnSettings(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env, agents?: AgentRegistry) {
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
      ...notifyOf(notifySettingsOf(config.approvals.notify, config.inbox)),
    },
    interruptedStreams: {
      onInterruptedStream: config.model.onInterruptedStream,
      resumeTimeoutMs: toMilliseconds(config.model.resumeTimeout),
      heartbeatTimeoutMs: toMilliseconds(config.model.heartbeatTimeout),
    },
    ...(config.telemetry.prometheus ? { telemetry: { metrics: true } } : {}),
    outcomes: { onUnknown: config.outcomes.onUnknown, resolveTimeoutMs: toMilliseconds(config.outcomes.resolveTimeout) },
  };
  return async function turnSettings(input?: TurnSettingsInput): Promise<TurnSettings> {
    // Stand-ins are read at each turn's start (the file changes while the worker runs), only where signatures are checked.
    const standIns = publicKeys ? readStandIns(config.approvals.standInsFile) : [];
    if (standIns.length > 0) return withStandIns(await base(input), standIns);
    return base(input);
  };
  async function base(input?: TurnSettingsInput): Promise<TurnSettings> {
    const name = input?.agent;
    // A subagent's turn is held to the approver groups of every agent above it too (an agent this worker does not declare has none).
    const aboveGroups = (input?.above ?? []).flatMap((above) => {
      const groups = agents?.get(above)?.approvals?.groups;
      return groups && Object.keys(groups).length > 0 ? [groups] : [];
    });
    const withAbove = aboveGroups.length > 0 ? { ...settings, aboveGroups } : settings;
    if (name === undefined) return withAbove;
    const agent = agents?.get(name);
    if (!agent) return { ...withAbove, unknownAgent: { name, known: agents?.names() ?? [] } };
    return { ...withAbove, agent: agentTurnSettings(agent, agents) };
  }
}
