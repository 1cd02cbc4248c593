import type { TollgateConfig } from '../config/config-schema';
import type { ToolDefinition } from '../tools/define-tool';
import type { IdempotencyStore } from '../intents/intent-store';
import { builtInTools } from '../tools/built-in';
import { createLookupStatus } from './boundary/lookup-status';
import { createModelStep } from './models/model-step';
import { createConfiguredModels, type CodeModels, type ModelEnvironment } from './models/language-model';
import { redactorForConfig } from '../hardened/redact';
import { redactingActivity } from '../hardened/redacting-activity';
import type { ActivityTelemetry } from './activity-telemetry';
import { createRunTool } from './boundary/run-tool';
import { keepingResults, keepsContents } from './kept-results';
import { createResolveIntent } from './boundary/resolve-intent';
import { createCheckCall } from './boundary/check-call';
import { createTurnSettings } from './turn-settings';
import { createDescribeTools } from './describe-tools';
import { toMilliseconds } from '../common/duration';
import type { Activities } from '../common/activity-types';
import { createToolRegistry, retryBackoffFromConfig, type ToolRegistry } from '../tools/tool-registry';
import { workerRules, type ApprovalRule } from '../policies/approval-rules';
import { createDecideByPolicy, createRecordGrant } from '../policies/decide-by-policy';
import { openPolicyStore, type PolicyStore } from '../policies/policy-store';
import type { AgentDefinition } from '../agents/define-agent';
import { agentsFromConfig } from '../agents/agent-config';
import { createAgentRegistry } from '../agents/agent-registry';
import { createAgentInstructions } from './models/agent-instructions';
import { agentCheckedRunTool } from './boundary/agent-checked-run-tool';
import { createSendNotification } from './send-notification';
import { configuredChannels } from '../notify/configured-channels';
import type { NotificationChannel } from '../notify/notification-channel';

/** What the activities are built from; tests pass their own tools and store. */
export interface ActivityDependencies {
  config: TollgateConfig;
  /** Replaces the built-in tools when given. */
  tools?: ToolDefinition[];
  /** Where write intents are recorded; whoever opened it closes it (see `openConfiguredStore`). */
  store: IdempotencyStore;
  /** Where model API keys are read (default: the process environment), and the fetch providers use. */
  modelEnvironment?: ModelEnvironment;
  /** AI SDK language models built in code, by name, next to the configured ones. */
  models?: CodeModels;
  /** The worker's tracer and metrics (none by default). */
  telemetry?: ActivityTelemetry;
  /** Where approval rules count their uses and grants are kept; whoever opened it closes it. Opened from the config on first use when left out. */
  policyStore?: PolicyStore;
  /** Approval rules given in code, matched before the config's `approvals.rules`. */
  approvalRules?: ApprovalRule[];
  /** Agents given in code (`defineAgent`), next to the config's `agents` (a name may not be in both). */
  agents?: AgentDefinition[];
  /** Notification channels built in code, next to the config's `approvals.notify.channels` (a name may not be in both). */
  notifyChannels?: NotificationChannel[];
}

/** Builds the activities; their export names are their registered names. */
export function createActivities({
  config,
  tools,
  store,
  modelEnvironment,
  models: codeModels,
  telemetry,
  policyStore,
  approvalRules,
  agents: codeAgents,
  notifyChannels,
}: ActivityDependencies): Activities {
  const models = createConfiguredModels(config, modelEnvironment, codeModels);
  const registry: ToolRegistry = createToolRegistry({
    tools: tools ?? builtInTools(config),
    overrides: config.tools,
    retry: retryBackoffFromConfig(config.retry),
    approvedScheduleToStartMs: toMilliseconds(config.approvals.scheduleToStart),
    localReads: config.temporal.worker.localReads,
  });
  // One redaction pass for everything the worker shows or stores outside its memory: the config's
  // patterns and the worker's own secrets, read where its keys are read.
  const redactor = redactorForConfig(config, { ...process.env, ...modelEnvironment?.env });
  // Rules compile now: an invalid one stops the worker at start, naming the rule and the field.
  const rules = workerRules(config.approvals.rules, approvalRules);
  // Agents are checked now against the tools and models served: one naming another stops the worker at start.
  const agents = createAgentRegistry({
    agents: [...(codeAgents ?? []), ...agentsFromConfig(config.agents)],
    toolNames: registry.list().map((tool) => tool.name),
    modelNames: [...models.keys()],
  });
  // Channels are built now, their secrets read from the environment: one missing stops the worker at start, naming it.
  const channels = configuredChannels(config.approvals.notify, { ...process.env, ...modelEnvironment?.env });
  for (const channel of notifyChannels ?? []) {
    if (channels.has(channel.name))
      throw new Error(`notification channel "${channel.name}" is given in code and in approvals.notify.channels; give it once`);
    channels.set(channel.name, channel);
  }
  let policies = policyStore;
  const policyDependencies = { rules, agentRules: agents.rules, store: () => (policies ??= openPolicyStore(config)) };
  return {
    modelStep: createModelStep({ registry, config, models, redactor, telemetry, store, agents }),
    // Large results are kept once in the store, as redacted, unless payloads are encrypted (the store holds plain JSON).
    runTool: keepingResults(
      redactingActivity(agentCheckedRunTool(createRunTool({ registry, store, secretPatterns: redactor.patterns }), agents), redactor),
      store,
      { enabled: keepsContents(config) },
    ),
    lookupStatus: redactingActivity(createLookupStatus({ registry, store, secretPatterns: redactor.patterns }), redactor),
    turnSettings: redactingActivity(createTurnSettings(config, process.env, agents), redactor),
    resolveIntent: redactingActivity(createResolveIntent({ registry, store }), redactor),
    checkCall: redactingActivity(createCheckCall({ registry, redactor }), redactor),
    describeTools: redactingActivity(createDescribeTools({ registry, config }), redactor),
    decideByPolicy: redactingActivity(createDecideByPolicy(policyDependencies), redactor),
    recordGrant: redactingActivity(createRecordGrant(policyDependencies), redactor),
    agentInstructions: redactingActivity(createAgentInstructions(agents), redactor),
    sendNotification: redactingActivity(createSendNotification({ channels, store, redactor }), redactor),
  };
}

/** The activity functions a worker registers (their contract with the workflows is in common/activity-types.ts). */
export type { Activities } from '../common/activity-types';
