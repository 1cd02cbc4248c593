import { Runtime, type InjectedSinks, type WorkerPlugin } from '@temporalio/worker';
import { createActivities, type Activities } from '../activities';
import type { CodeModels } from '../activities/models/language-model';
import { NO_TELEMETRY, type ActivityTelemetry } from '../activities/activity-telemetry';
import type { AgentDefinition } from '../agents/define-agent';
import { toMilliseconds } from '../common/duration';
import type { TelemetrySinks } from '../common/telemetry';
import type { TollgateConfig } from '../config/config-schema';
import { redactorForConfig } from '../hardened/redact';
import type { IdempotencyStore } from '../intents/intent-store';
import { openConfiguredStore } from '../intents/open-store';
import { startRetention, type RetentionPass } from '../intents/retention';
import type { ApprovalRule } from '../policies/approval-rules';
import { openPolicyStore, type PolicyStore } from '../policies/policy-store';
import { builtInTools } from '../tools/built-in';
import type { ToolDefinition } from '../tools/define-tool';
import { openToolSources, type ToolSource } from '../tools/tool-source';
import { configuredToolSources } from '../tools/tool-sources';
import { TollgateMetrics } from './telemetry/metrics';
import { startMetricsServer } from './telemetry/metrics-server';
import { createTracing } from './telemetry/tracing';
import { unsignedApprovalsWarning } from './unsigned-approvals';
import { withNotifyInCode, type NotifyInCode } from './notify-in-code';

/** What a worker serves Tollgate from, in `createWorker` and in `TollgatePlugin` alike. */
export interface TollgateServingOptions {
  config: TollgateConfig;
  /** Replaces the built-in tools. */
  tools?: ToolDefinition[];
  /**
   * Agents (`defineAgent`) a turn may name, next to the config's `agents` section; each is checked
   * against the tools and models served, and a turn naming another fails with `invalid_input`.
   */
  // The element type is widened: an agent's typed output plays no part in serving it.
  agents?: Array<AgentDefinition<any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /**
   * Sources whose tools are served next to `tools` (`mcpToolSource(…)`, one of your own); they
   * replace the ones the config's sections open (`configuredToolSources()`: the `mcp` servers).
   */
  toolSources?: ToolSource[];
  /** Where tool sources write their lines, redacted (an MCP server's stderr, reconnects); default: the worker's stderr. */
  toolSourceLog?: (line: string) => void;
  /** Replaces the store the config names; the caller then closes it. */
  store?: IdempotencyStore;
  /**
   * Approval rules in code (the shape of the config's `approvals.rules`), matched before the
   * config's; an invalid one stops the worker at start, naming the rule and the field.
   */
  approvalRules?: ApprovalRule[];
  /** Replaces the store of rules' counts and grants the config names; the caller then closes it. */
  policyStore?: PolicyStore;
  /**
   * AI SDK language models built in code (specification v4), by the name a turn selects them with,
   * next to the config's `model.models` (a name may not be in both).
   */
  models?: CodeModels;
  /** Replaces the activities built from config and tools (tests wrap them to observe calls). */
  activities?: Activities;
  /** The Temporal runtime's own metrics endpoint (from `installRuntimeMetrics`), merged into this worker's `/metrics`. */
  coreMetricsUrl?: string;
  /**
   * Who is told when a call waits for a person, in code: channels, approver groups and routes in the
   * shape of config `approvals.notify`, added to the config's (routes given here are matched first).
   */
  notify?: NotifyInCode;
}

/** Something that runs beside the worker while it runs (the store's retention): started with it, it returns how to stop it. */
export type WorkerService = () => () => void;

/** What a worker's telemetry adds to it: the activities' tracer and metrics, Temporal's plugin, the workflows' sink, `/metrics`. */
export interface WorkerTelemetry {
  activities: ActivityTelemetry;
  plugins: WorkerPlugin[];
  sinks: InjectedSinks<TelemetrySinks>;
  metricsUrl?: string;
  metrics?: TollgateMetrics;
}

/** What a worker serves Tollgate with: its activities, telemetry and services, and what it opened to build them. */
export interface TollgateServing {
  activities: Activities;
  telemetry: WorkerTelemetry;
  /** The store's retention, when the worker opened or was given a store. */
  services: WorkerService[];
}

/**
 * Opens what a worker serves Tollgate with, in this order: the tool sources (one that cannot open
 * stops everything before anything else is opened), the telemetry, the idempotency and policy
 * stores, then builds the activities (stopping on a bad declaration). Each thing opened pushes
 * its close onto `owned`, which the caller runs in reverse when the worker stops or a later step fails.
 */
export async function openTollgateServing(
  options: TollgateServingOptions,
  owned: Array<() => Promise<void>>,
  where = 'createWorker',
): Promise<TollgateServing> {
  const { tools, store: givenStore, activities } = options;
  const config = withNotifyInCode(options.config, options.notify, where);
  if (activities && options.notify) {
    throw new Error(`${where}: give notify or activities, not both (activities already carry their channels)`);
  }
  if (activities && options.toolSources) {
    throw new Error(`${where}: give toolSources or activities, not both (activities already carry their tools)`);
  }
  if (activities && options.models) {
    throw new Error(`${where}: give models or activities, not both (activities already carry their models)`);
  }
  if (activities && options.agents) {
    throw new Error(`${where}: give agents or activities, not both (activities already carry their agents)`);
  }
  // Tool sources open first: one that cannot open stops the worker before anything else is opened.
  // What they write (a server's stderr) reaches the log redacted, like every other line a worker writes.
  const redactor = redactorForConfig(config);
  const sourceLog = options.toolSourceLog ?? ((line: string) => console.warn(line));
  const toolSources = options.toolSources ?? (activities ? [] : configuredToolSources());
  const sourced = await openToolSources(toolSources, { config, log: (line) => sourceLog(redactor.text(line)) });
  owned.push(() => sourced.close());
  const telemetry = await startTelemetry(config, options.coreMetricsUrl, owned);
  let served = activities;
  let store = givenStore;
  if (!served) {
    store ??= openConfiguredStore(config);
    if (!givenStore) owned.push(() => store!.close());
    const servedTools = [...(tools ?? builtInTools(config)), ...sourced.tools];
    let policyStore = options.policyStore;
    if (!policyStore) {
      policyStore = openPolicyStore(config);
      owned.push(() => policyStore!.close());
    }
    served = createActivities({
      config,
      tools: servedTools,
      store,
      models: options.models,
      telemetry: telemetry.activities,
      policyStore,
      approvalRules: options.approvalRules,
      agents: options.agents,
    });
    telemetry.metrics?.knowTools(servedTools);
    telemetry.metrics?.knowAgents([...(options.agents ?? []).map((agent) => agent.name), ...Object.keys(config.agents ?? {})]);
    const unsigned = unsignedApprovalsWarning(config, servedTools);
    if (unsigned) Runtime.instance().logger.warn(unsigned);
  }
  return { activities: served, telemetry, services: store ? [retentionService(store, config)] : [] };
}

/**
 * Starts what config `telemetry` asks for: tracing (closed last, after the worker stopped, so the
 * last spans are exported) and the `/metrics` endpoint (its port is taken here, so a port in use
 * stops the worker before it serves anything).
 */
async function startTelemetry(config: TollgateConfig, coreMetricsUrl: string | undefined, owned: Array<() => Promise<void>>) {
  const tracing = createTracing(config);
  if (tracing) owned.push(() => tracing.shutdown());
  const metrics = config.telemetry.prometheus ? new TollgateMetrics() : undefined;
  let metricsUrl: string | undefined;
  if (metrics) {
    const { host, port } = config.telemetry.prometheus!;
    const server = await startMetricsServer({ host, port, registry: metrics.registry, coreMetricsUrl });
    owned.push(() => server.close());
    metricsUrl = server.url;
  }
  const telemetry: WorkerTelemetry = {
    activities: {
      tracer: tracing?.tracer,
      recordContent: config.telemetry.recordContent,
      observeModelStep: metrics ? (observation) => metrics.observeModelStep(observation) : NO_TELEMETRY.observeModelStep,
    },
    plugins: tracing ? [tracing.plugin] : [],
    // The sink is registered even when metrics are off: a turn started by a worker that counts (its settings say so) may go on here.
    sinks: (metrics ?? new TollgateMetrics()).sinks(),
    metricsUrl,
    metrics,
  };
  return telemetry;
}

/** Prunes the store's committed intents older than `store.retention` while the worker runs, and logs each pass. */
export function retentionService(store: IdempotencyStore, config: TollgateConfig): WorkerService {
  const retentionMs = toMilliseconds(config.store.retention);
  return () => startRetention({ store, retentionMs, onPass: logRetentionPass }).stop;
}

function logRetentionPass(pass: RetentionPass): void {
  const logger = Runtime.instance().logger;
  const committedBefore = pass.committedBefore.toISOString();
  if ('error' in pass)
    logger.warn('retention: could not prune the idempotency store', {
      committedBefore,
      message: String((pass.error as Error)?.message ?? pass.error),
    });
  else logger.info('retention: pruned committed intents', { committedBefore, ...pass.report });
}
