import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import {
  Runtime,
  type BundleOptions,
  type BundlerPlugin,
  type ReplayWorkerOptions,
  type Worker,
  type WorkerOptions,
  type WorkerPlugin,
} from '@temporalio/worker';
import { ENCRYPTED_CONVERTER_PATHS } from '../codec/aes-gcm-codec';
import { TollgateMetrics } from './telemetry/metrics';
import { TRACING_WORKFLOW_MODULES } from './telemetry/tracing-modules';
import { openTollgateServing, type TollgateServing, type TollgateServingOptions } from './tollgate-serving';
import { checkBundle, dataConverterFor } from './worker-data-converter';
import { BESIDE_YOUR_WORKFLOWS_PATH, tollgateWorkflowBundle, WORKFLOWS_PATH, YOUR_WORKFLOWS_MODULE } from './workflow-bundle';

/** What `TollgatePlugin` serves: the config, tools, agents, models and stores, as `createWorker` takes them. */
export type TollgatePluginOptions = TollgateServingOptions;

/**
 * Tollgate in a Temporal worker of your own: `Worker.create({ …, plugins: [new TollgatePlugin({ config, tools, agents })] })`
 * adds Tollgate's workflows (bundled beside your `workflowsPath`), its activities (beside yours), its
 * data converter (when the config encrypts), its telemetry and its worker settings; the worker then
 * serves turns on the task queue it polls. What the plugin opens (the stores, tool sources, the
 * metrics endpoint) closes when the worker stops, or by `close()` for a worker that never ran.
 */
export class TollgatePlugin implements WorkerPlugin, BundlerPlugin {
  readonly name = 'tollgate';
  private readonly owned: Array<() => Promise<void>> = [];
  private opening?: Promise<TollgateServing>;
  private configured = false;

  constructor(private readonly options: TollgatePluginOptions) {
    if (!options?.config) throw new TypeError('TollgatePlugin: options.config is required (loadConfig() reads it)');
  }

  /** Where this worker serves `/metrics` (config `telemetry.prometheus`), once the worker was created. */
  get metricsUrl(): Promise<string | undefined> {
    return (this.opening ?? Promise.resolve(undefined)).then((serving) => serving?.telemetry.metricsUrl);
  }

  /** Opens what the worker serves Tollgate with (tool sources, telemetry, stores, activities), once. */
  open(): Promise<TollgateServing> {
    this.opening ??= openTollgateServing(this.options, this.owned, 'TollgatePlugin').catch(async (error: unknown) => {
      await this.close();
      throw error;
    });
    return this.opening;
  }

  /** Adds Tollgate to the options of `Worker.create`. */
  async configureWorker(options: WorkerOptions): Promise<WorkerOptions> {
    if (this.configured) {
      throw new Error('TollgatePlugin: one plugin serves one worker; give each Worker.create a TollgatePlugin of its own');
    }
    this.configured = true;
    const { config } = this.options;
    try {
      await checkBundle(config, options.workflowBundle);
      const serving = await this.open();
      const logger = Runtime.instance().logger;
      const taken = Object.keys(serving.activities).filter((name) => Object.hasOwn(options.activities ?? {}, name));
      if (taken.length > 0) {
        throw new Error(`TollgatePlugin: your activities ${taken.join(', ')} have the names of Tollgate's; rename yours`);
      }
      if (options.taskQueue !== config.temporal.taskQueue) {
        logger.info(
          `TollgatePlugin: this worker serves turns on task queue "${options.taskQueue}"; clients that read the config ` +
            `(the CLI, the web inbox, TollgateClient) start them on "${config.temporal.taskQueue}" (temporal.taskQueue)`,
        );
      }
      let configured: WorkerOptions = {
        ...options,
        activities: { ...options.activities, ...serving.activities },
        dataConverter: withTollgateConverter(options.dataConverter, dataConverterFor(config)),
        // Heartbeats carry a streaming model step's text to live views; sent at least every second unless you say otherwise.
        maxHeartbeatThrottleInterval: options.maxHeartbeatThrottleInterval ?? '1 second',
        maxCachedWorkflows: options.maxCachedWorkflows ?? config.temporal.worker.maxCachedWorkflows,
        sinks: { ...serving.telemetry.sinks, ...options.sinks },
      };
      // With no workflows of yours, Tollgate's alone: the bundle `npm run build` prebuilt, or bundled now.
      if (!options.workflowsPath && !options.workflowBundle) {
        const variant = { encrypted: Boolean(config.encryption.keysEnv), traced: serving.telemetry.plugins.length > 0 };
        configured.workflowBundle = await tollgateWorkflowBundle(variant, logger);
      }
      for (const plugin of serving.telemetry.plugins) if (plugin.configureWorker) configured = await plugin.configureWorker(configured);
      return configured;
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** Adds Tollgate's workflows and converters to a replay worker (`Worker.runReplayHistories`). */
  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const { config } = this.options;
    return {
      ...options,
      dataConverter: withTollgateConverter(options.dataConverter, dataConverterFor(config)),
      ...(options.workflowsPath || options.workflowBundle ? {} : { workflowsPath: WORKFLOWS_PATH }),
      sinks: { ...new TollgateMetrics().sinks(), ...options.sinks },
    };
  }

  /**
   * Bundles Tollgate's workflows beside yours: the bundle's entry becomes one that exports both (your
   * `workflowsPath` reached through an alias), with the converters and interceptors the config needs.
   * Also for `bundleWorkflowCode({ workflowsPath, plugins: [plugin] })`, a bundle built ahead.
   */
  configureBundler(options: BundleOptions): BundleOptions {
    const { config } = this.options;
    const bundle: BundleOptions = { ...options };
    const yours = options.workflowsPath ? path.resolve(options.workflowsPath) : undefined;
    if (yours === undefined || yours === WORKFLOWS_PATH) {
      bundle.workflowsPath = WORKFLOWS_PATH;
    } else if (yours !== BESIDE_YOUR_WORKFLOWS_PATH) {
      const hook = options.webpackConfigHook;
      bundle.workflowsPath = BESIDE_YOUR_WORKFLOWS_PATH;
      bundle.webpackConfigHook = (webpackConfig) => {
        const hooked = hook ? hook(webpackConfig) : webpackConfig;
        const alias = hooked.resolve?.alias;
        if (Array.isArray(alias)) throw new Error('TollgatePlugin: a webpackConfigHook that sets resolve.alias as a list is not supported');
        return { ...hooked, resolve: { ...hooked.resolve, alias: { ...alias, [`${YOUR_WORKFLOWS_MODULE}$`]: yours } } };
      };
    }
    if (config.encryption.keysEnv) {
      const converters = [options.payloadConverterPath, options.failureConverterPath].filter(Boolean);
      if (converters.some((file) => !Object.values(ENCRYPTED_CONVERTER_PATHS).includes(file as string))) {
        throw new Error(
          "TollgatePlugin: encryption is on (encryption.keysEnv) and the bundle names converters of its own; a bundle takes one payload and failure converter, and Tollgate's must be it",
        );
      }
      Object.assign(bundle, ENCRYPTED_CONVERTER_PATHS);
    }
    if (config.telemetry.otlp) {
      bundle.workflowInterceptorModules = [...new Set([...(options.workflowInterceptorModules ?? []), ...TRACING_WORKFLOW_MODULES])];
    }
    return bundle;
  }

  /** Runs the worker with Tollgate's services (the store's retention), and closes what the plugin opened when it stops. */
  async runWorker(worker: Worker, next: (worker: Worker) => Promise<void>): Promise<void> {
    const serving = await this.opening;
    const stops = (serving?.services ?? []).map((start) => start());
    // The telemetry's own plugin wraps the run too, as it would as a plugin of the worker.
    let run = next;
    for (const plugin of [...(serving?.telemetry.plugins ?? [])].reverse()) {
      const inner = run;
      if (plugin.runWorker) run = (running) => plugin.runWorker!(running, inner);
    }
    try {
      await run(worker);
    } finally {
      for (const stop of stops) stop();
      await this.close();
    }
  }

  /** Closes what the plugin opened (also for a worker that was created but never ran); a second call does nothing. */
  async close(): Promise<void> {
    for (const close of this.owned.splice(0).reverse()) await close().catch(() => undefined);
  }
}

/**
 * The worker's data converter with Tollgate's (when the config encrypts) in it. A worker has one
 * payload codec chain and one pair of converters for every workflow it runs, so a converter of
 * yours and Tollgate's encryption together are refused rather than one silently dropped.
 */
function withTollgateConverter(yours: DataConverter | undefined, tollgate: DataConverter | undefined): DataConverter | undefined {
  if (!tollgate) return yours;
  if (yours && (yours.payloadCodecs?.length || yours.payloadConverterPath || yours.failureConverterPath)) {
    throw new Error(
      'TollgatePlugin: encryption is on (encryption.keysEnv) and the worker has a data converter of its own; ' +
        "a worker has one, so run Tollgate's turns on a worker (and task queue) of their own, or turn Tollgate's encryption off",
    );
  }
  return { ...yours, ...tollgate };
}
