import { readFile } from 'node:fs/promises';
import type { DataConverter } from '@temporalio/common';
import { Runtime, Worker, type InjectedSinks, type NativeConnection, type WorkerOptions, type WorkerPlugin } from '@temporalio/worker';
import { codecFromEnvironment, ENCRYPTED_CONVERTER_PATHS } from '../codec/aes-gcm-codec';
import { tollgateWorkflowBundle } from './workflow-bundle';
import { createActivities, type Activities } from '../activities';
import type { CodeModels } from '../activities/models/language-model';
import { openConfiguredStore } from '../intents/open-store';
import type { ApprovalRule } from '../policies/approval-rules';
import { openPolicyStore, type PolicyStore } from '../policies/policy-store';
import type { IdempotencyStore } from '../intents/intent-store';
import { startRetention, type RetentionPass } from '../intents/retention';
import { toMilliseconds } from '../common/duration';
import type { ToolDefinition } from '../tools/define-tool';
import type { AgentDefinition } from '../agents/define-agent';
import type { TollgateConfig } from '../config/config-schema';
import { connectWorker } from '../connection/temporal-connection';
import { openToolSources, type ToolSource } from '../tools/tool-source';
import { configuredToolSources } from '../tools/tool-sources';
import { redactorForConfig } from '../hardened/redact';
import { builtInTools } from '../tools/built-in';
import { NO_TELEMETRY, type ActivityTelemetry } from '../activities/activity-telemetry';
import type { TelemetrySinks } from '../common/telemetry';
import { TollgateMetrics } from './telemetry/metrics';
import { unsignedApprovalsWarning } from './unsigned-approvals';
import { startMetricsServer } from './telemetry/metrics-server';
import { createTracing } from './telemetry/tracing';
import {
  deploymentOptionsFor,
  deploymentVersionOf,
  makeCurrent,
  shouldMakeCurrent,
  versionLabel,
  type MakeCurrentOutcome,
} from './deployment';
import type { WorkerDeploymentVersion } from '@temporalio/common';

export { WORKFLOWS_PATH } from './workflow-bundle';

/** Options of a Tollgate worker; anything in `workerOptions` goes to Temporal's Worker as it is. */
export interface CreateWorkerOptions {
  config: TollgateConfig;
  /** When left out, the worker connects as the config says (registering the search attributes) and closes that connection when it stops. */
  connection?: NativeConnection;
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
  /**
   * A bundle of your own from `bundleWorkflowCode`; otherwise the worker loads the bundle
   * `npm run build` prebuilt for its config (built Tollgate), or bundles the workflows as it starts (from source).
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  workerOptions?: Partial<WorkerOptions>;
  /** The Temporal runtime's own metrics endpoint (from `installRuntimeMetrics`), merged into this worker's `/metrics`. */
  coreMetricsUrl?: string;
}

/** Where a worker's workflow code came from (the prebuilt bundle's path, when it is one). */
export type WorkflowCodeSource = { from: 'given' } | { from: 'prebuilt'; path: string } | { from: 'bundled at start' };

/** Something that runs beside the worker while it runs (the store's retention): started with it, it returns how to stop it. */
export type WorkerService = () => () => void;

/**
 * A Temporal worker serving Tollgate's workflows and activities, with the resources it opened
 * itself (the connection, the idempotency store, the tool sources): `run` and `runUntil` close
 * them when the worker has stopped; what the caller passed in stays the caller's to close. Its
 * services (the store's retention) start when it runs and stop when it stops.
 */
export class TollgateWorker {
  constructor(
    /** The Temporal worker itself. */
    readonly worker: Worker,
    private readonly owned: Array<() => Promise<void>>,
    private readonly services: WorkerService[] = [],
    /** Where this worker serves `/metrics` (config `telemetry.prometheus`); undefined when metrics are off. */
    readonly metricsUrl?: string,
    /** The deployment version this worker is (config `temporal.deployment`); undefined for an unversioned worker. */
    readonly deploymentVersion?: WorkerDeploymentVersion,
    private readonly promotion?: Promotion,
    /** Where this worker's workflow code came from: given by the caller, prebuilt by `npm run build`, or bundled as it started. */
    readonly workflowCode: WorkflowCodeSource = { from: 'given' },
  ) {}

  /**
   * What became of making this worker's build current as it started (config
   * `temporal.deployment.makeCurrent`); settles once the worker runs and the server answered.
   */
  get madeCurrent(): Promise<MakeCurrentOutcome> {
    return this.promotion?.outcome ?? Promise.resolve({ made: 'not_asked', why: 'the worker is unversioned' });
  }

  /** Runs until `shutdown()` or a signal, then closes what this worker opened. */
  async run(): Promise<void> {
    try {
      this.startServices();
      await this.worker.run();
    } finally {
      await this.close();
    }
  }

  /** Runs while `fn` runs, then shuts down and closes what this worker opened. */
  async runUntil<R>(fn: Promise<R> | (() => Promise<R>)): Promise<R> {
    try {
      this.startServices();
      return await this.worker.runUntil(fn);
    } finally {
      await this.close();
    }
  }

  /** Starts a graceful shutdown; `run` returns once in-flight tasks are done. */
  shutdown(): void {
    this.worker.shutdown();
  }

  /** The Temporal worker's state (`RUNNING`, `STOPPED`, …). */
  getState(): ReturnType<Worker['getState']> {
    return this.worker.getState();
  }

  private startServices(): void {
    if (this.promotion) this.owned.push(async () => this.promotion!.stop());
    this.promotion?.start();
    for (const start of this.services.splice(0)) {
      const stop = start();
      this.owned.push(async () => stop());
    }
  }

  private async close(): Promise<void> {
    for (const close of this.owned.splice(0).reverse()) await close();
  }
}

/** A name only the converters of an encrypting worker put into a workflow bundle. */
const ENCRYPTED_BUNDLE_MARKER = 'MarkingPayloadConverter';

/**
 * Refuses a prebuilt bundle that lacks the converters an encrypting worker needs (it would keep
 * failures in plaintext and take unencrypted decisions).
 */
async function checkBundle(config: TollgateConfig, bundle: WorkerOptions['workflowBundle']): Promise<void> {
  if (!bundle || !config.encryption.keysEnv) return;
  const code = 'code' in bundle ? bundle.code : await readFile(bundle.codePath, 'utf8');
  if (!code.includes(ENCRYPTED_BUNDLE_MARKER)) {
    throw new Error(
      'workflowBundle: encryption is on (encryption.keysEnv), but the bundle was built without ENCRYPTED_CONVERTER_PATHS; ' +
        'pass them to bundleWorkflowCode',
    );
  }
}

/**
 * Opens the tool sources and lists their tools, builds the tool registry (stopping here on a bad
 * declaration or a source that cannot open), bundles the workflows and creates the worker.
 */
export async function createWorker(options: CreateWorkerOptions): Promise<TollgateWorker> {
  const { config, connection: given, tools, store: givenStore, activities, workflowBundle, workerOptions } = options;
  await checkBundle(config, workflowBundle);
  const owned: Array<() => Promise<void>> = [];
  try {
    if (activities && options.toolSources) {
      throw new Error('createWorker: give toolSources or activities, not both (activities already carry their tools)');
    }
    if (activities && options.models) {
      throw new Error('createWorker: give models or activities, not both (activities already carry their models)');
    }
    if (activities && options.agents) {
      throw new Error('createWorker: give agents or activities, not both (activities already carry their agents)');
    }
    // Tool sources open first: one that cannot open stops the worker before anything else is opened.
    // What they write (a server's stderr) reaches the log redacted, like every other line a worker writes.
    const redactor = redactorForConfig(config);
    const sourceLog = options.toolSourceLog ?? ((line: string) => console.warn(line));
    const toolSources = options.toolSources ?? (activities ? [] : configuredToolSources());
    const sourced = await openToolSources(toolSources, { config, log: (line) => sourceLog(redactor.text(line)) });
    owned.push(() => sourced.close());
    const telemetry = await startTelemetry(config, options.coreMetricsUrl, owned);
    const connection = given ?? (await connectWorker(config));
    if (!given) owned.push(() => connection.close());
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
      const unsigned = unsignedApprovalsWarning(config, servedTools);
      if (unsigned) Runtime.instance().logger.warn(unsigned);
    }
    const services = store ? [retentionService(store, config)] : [];
    // The bundle is built before the worker, so the build id can be derived from its code.
    const bundle =
      workflowBundle ??
      (await tollgateWorkflowBundle(
        { encrypted: Boolean(config.encryption.keysEnv), traced: telemetry.plugins.length > 0 },
        Runtime.instance().logger,
      ));
    const workflowCode: WorkflowCodeSource = workflowBundle
      ? { from: 'given' }
      : 'codePath' in bundle
        ? { from: 'prebuilt', path: bundle.codePath }
        : { from: 'bundled at start' };
    const code = 'code' in bundle ? bundle.code : await readFile(bundle.codePath, 'utf8');
    const version = deploymentVersionOf(config, code);
    const worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      workflowBundle: bundle,
      ...deploymentOptionsFor(version),
      activities: served,
      dataConverter: dataConverterFor(config),
      // Heartbeats carry a streaming model step's text to live views; send them at least every second.
      maxHeartbeatThrottleInterval: '1 second',
      // Bounded so that turns waiting for a person, used least recently, leave memory (docs/operations.md#waiting-turns-and-memory).
      maxCachedWorkflows: config.temporal.worker.maxCachedWorkflows,
      ...workerOptions,
      plugins: [...telemetry.plugins.map((plugin) => (workflowBundle ? plugin : bundledPlugin(plugin))), ...(workerOptions?.plugins ?? [])],
      sinks: { ...telemetry.sinks, ...workerOptions?.sinks },
    });
    const promotion = version ? new Promotion(config, connection, version) : undefined;
    return new TollgateWorker(worker, owned, services, telemetry.metricsUrl, version, promotion, workflowCode);
  } catch (error) {
    for (const close of owned.reverse()) await close().catch(() => undefined);
    throw error;
  }
}

/**
 * A plugin whose workflow interceptors are already in the bundle built for the worker: the worker
 * is given the rest of what it configures (activity interceptors, sinks), not the modules again.
 */
function bundledPlugin(plugin: WorkerPlugin): WorkerPlugin {
  // The plugin's other hooks stay its own (they live on its prototype, which a spread would drop).
  const wrapped = Object.create(plugin) as WorkerPlugin;
  wrapped.configureWorker = async (options) => {
    const configured = plugin.configureWorker ? await plugin.configureWorker(options) : options;
    return { ...configured, interceptors: { ...configured.interceptors, workflowModules: options.interceptors?.workflowModules } };
  };
  return wrapped;
}

/**
 * Makes a worker's build current as it starts, when config `temporal.deployment.makeCurrent` asks
 * for it (on a dev server by default), and logs what came of it.
 */
class Promotion {
  private readonly abort = new AbortController();
  private settle!: (outcome: MakeCurrentOutcome) => void;
  readonly outcome = new Promise<MakeCurrentOutcome>((resolve) => (this.settle = resolve));

  constructor(
    private readonly config: TollgateConfig,
    private readonly connection: NativeConnection,
    private readonly version: WorkerDeploymentVersion,
  ) {}

  start(): void {
    void this.run().then(this.settle, (error: Error) => this.settle({ made: 'failed', why: String(error?.message ?? error) }));
  }

  stop(): void {
    this.abort.abort();
  }

  private async run(): Promise<MakeCurrentOutcome> {
    const logger = Runtime.instance().logger;
    const label = versionLabel(this.version);
    const service = this.connection.workflowService;
    const asked = await shouldMakeCurrent(this.config, service);
    if (!asked.yes) {
      if (this.config.temporal.deployment.makeCurrent !== 'auto' || !/no worker deployments/.test(asked.why))
        logger.info(`deployment: build ${label} takes new turns once it is current (${asked.why})`);
      return { made: 'not_asked', why: asked.why };
    }
    const outcome = await makeCurrent(service, this.config.temporal.namespace, this.version, { signal: this.abort.signal });
    if (outcome.made === 'current') logger.info(`deployment: build ${label} is current`);
    else if (outcome.made === 'failed') logger.warn(`deployment: build ${label} could not be made current: ${outcome.why}`);
    return outcome;
  }
}

/** What a worker's telemetry adds to it: the activities' tracer and metrics, Temporal's plugin, the workflows' sink, `/metrics`. */
interface WorkerTelemetry {
  activities: ActivityTelemetry;
  plugins: WorkerPlugin[];
  sinks: InjectedSinks<TelemetrySinks>;
  metricsUrl?: string;
  metrics?: TollgateMetrics;
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

/**
 * Encrypts every payload and failure message when the config names a keyring (`encryption.keysEnv`),
 * flagging what arrives unencrypted for the workflow to refuse (`encryption.requireEncrypted`); plain JSON otherwise.
 */
export function dataConverterFor(config: TollgateConfig): DataConverter | undefined {
  const codec = codecFromEnvironment(config.encryption.keysEnv, process.env, { markUnencrypted: config.encryption.requireEncrypted });
  return codec ? { payloadCodecs: [codec], ...ENCRYPTED_CONVERTER_PATHS } : undefined;
}
