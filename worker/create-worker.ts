import { readFile } from 'node:fs/promises';
import { Runtime, Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { tollgateWorkflowBundle } from './workflow-bundle';
import { connectWorker } from '../connection/temporal-connection';
import { TollgatePlugin } from './tollgate-plugin';
import type { TollgateServingOptions, WorkerService } from './tollgate-serving';
import {
  deploymentOptionsFor,
  deploymentVersionOf,
  makeCurrent,
  shouldMakeCurrent,
  versionLabel,
  type MakeCurrentOutcome,
} from './deployment';
import type { TollgateConfig } from '../config/config-schema';

export { WORKFLOWS_PATH } from './workflow-bundle';
export { retentionService, type WorkerService } from './tollgate-serving';
export { checkBundle, dataConverterFor } from './worker-data-converter';

/**
 * Options of a Tollgate worker: what it serves (shared with `TollgatePlugin`, see `TollgateServingOptions`),
 * its connection and workflow bundle; anything in `workerOptions` goes to Temporal's Worker as it is.
 */
export interface CreateWorkerOptions extends TollgateServingOptions {
  /** When left out, the worker connects as the config says (registering the search attributes) and closes that connection when it stops. */
  connection?: NativeConnection;
  /**
   * A bundle of your own from `bundleWorkflowCode`; otherwise the worker loads the bundle
   * `npm run build` prebuilt for its config (built Tollgate), or bundles the workflows as it starts (from source).
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  workerOptions?: Partial<WorkerOptions>;
}

/** Where a worker's workflow code came from (the prebuilt bundle's path, when it is one). */
export type WorkflowCodeSource = { from: 'given' } | { from: 'prebuilt'; path: string } | { from: 'bundled at start' };

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

/**
 * Opens the tool sources and lists their tools, builds the tool registry (stopping here on a bad
 * declaration or a source that cannot open), bundles the workflows and creates the worker: a worker
 * of Tollgate alone, served through the same `TollgatePlugin` a worker of your own takes.
 */
export async function createWorker(options: CreateWorkerOptions): Promise<TollgateWorker> {
  const { config, connection: given, workflowBundle, workerOptions } = options;
  const plugin = new TollgatePlugin(options);
  const owned: Array<() => Promise<void>> = [];
  try {
    // What the plugin opens comes first: a tool source that cannot open stops the worker before it connects.
    const serving = await plugin.open();
    const connection = given ?? (await connectWorker(config));
    if (!given) owned.push(() => connection.close());
    // The bundle is built before the worker, so the build id can be derived from its code.
    const bundle =
      workflowBundle ??
      (await tollgateWorkflowBundle(
        { encrypted: Boolean(config.encryption.keysEnv), traced: serving.telemetry.plugins.length > 0 },
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
      ...workerOptions,
      plugins: [plugin, ...(workerOptions?.plugins ?? [])],
    });
    const promotion = version ? new Promotion(config, connection, version) : undefined;
    const metricsUrl = serving.telemetry.metricsUrl;
    return new TollgateWorker(worker, owned, [], metricsUrl, version, promotion, workflowCode);
  } catch (error) {
    await plugin.close();
    for (const close of owned.reverse()) await close().catch(() => undefined);
    throw error;
  }
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
