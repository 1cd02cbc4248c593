// A worker of the peer benchmark in its own process, so that its CPU time and memory are its own:
// either Tollgate's (the turn workflow and the built-in tools, with the loopback model) or the bare
// agent loop's (bareAgentPlan with plain activities). Answers "cpu" over IPC with its CPU time, and
// "measure" with its CPU time, RSS and heap after a garbage collection.
// Usage: node --expose-gc --import tsx bench/variant-worker.ts '{"variant","address","taskQueue","folder","baseURL","bundleFile"[,"cluster"]}'
// ("cluster": the address, namespace and TLS of a cluster of `npm run cluster`, reached over TLS;
// "maxCachedWorkflows": the Tollgate worker's workflow cache, when not the default).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createWorker } from '../worker/create-worker';
import { clusterClientConfig, clusterTls, type Cluster } from '../server/cluster/cluster';
import { quietRuntime } from './context';
import { PLAN_CORPUS, planConfig } from './plan-config';
import { planModelActivities } from './plan-model';
import { planToolActivities } from './plan-tools';
import { runChild, runUntilParentLeaves } from './child-worker';

/** What a worker of the peer benchmark reports. */
export interface VariantReading {
  cpuMs: number;
  rssBytes?: number;
  heapUsedBytes?: number;
  cachedWorkflows?: number;
  /** With "mark": the process's monotonic clock in µs, the clock of its CPU profiles' samples. */
  monotonicUs?: number;
}

interface Settings {
  variant: 'tollgate' | 'bare';
  address: string;
  taskQueue: string;
  folder: string;
  baseURL: string;
  bundleFile: string;
  cluster?: Pick<Cluster, 'address' | 'namespace' | 'tls'>;
  /** The Tollgate worker's workflow cache, when not the config's default. */
  maxCachedWorkflows?: number;
  /** The Tollgate worker runs reads as local activities (config temporal.worker.localReads). */
  localReads?: boolean;
}

function settingsFrom(argument: string | undefined): Settings {
  const settings = JSON.parse(argument ?? '{}') as Partial<Settings>;
  if (settings.variant !== 'tollgate' && settings.variant !== 'bare')
    throw new Error(`bench/variant-worker.ts: variant must be tollgate or bare, got ${JSON.stringify(settings.variant)}`);
  for (const key of ['address', 'taskQueue', 'folder', 'baseURL', 'bundleFile'] as const) {
    if (typeof settings[key] !== 'string' || !settings[key]) throw new Error(`bench/variant-worker.ts: the settings lack "${key}"`);
  }
  return settings as Settings;
}

/** This process's CPU time so far, and with `full` its memory after a garbage collection. */
export function reading(full: boolean, cachedWorkflows: () => number): VariantReading {
  const cpu = process.cpuUsage();
  const cpuMs = (cpu.user + cpu.system) / 1000;
  if (!full) return { cpuMs };
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const memory = process.memoryUsage();
  return { cpuMs, rssBytes: memory.rss, heapUsedBytes: memory.heapUsed, cachedWorkflows: cachedWorkflows() };
}

async function start(settings: Settings, connection: NativeConnection) {
  const workflowBundle = { code: readFileSync(settings.bundleFile, 'utf8') };
  if (settings.variant === 'tollgate') {
    const plain = settings.cluster ? clusterClientConfig(planConfig(settings), settings.cluster) : planConfig(settings);
    const { maxCachedWorkflows = plain.temporal.worker.maxCachedWorkflows, localReads = plain.temporal.worker.localReads } = settings;
    const config = { ...plain, temporal: { ...plain.temporal, worker: { maxCachedWorkflows, localReads } } };
    const worker = await createWorker({ config, connection, workflowBundle });
    return { run: () => worker.run(), shutdown: () => worker.shutdown(), cached: () => worker.worker.getStatus().numCachedWorkflows };
  }
  const folders = { corpus: PLAN_CORPUS, workspace: path.join(settings.folder, 'workspace') };
  const worker = await Worker.create({
    connection,
    taskQueue: settings.taskQueue,
    workflowBundle,
    activities: { ...planToolActivities(folders), ...planModelActivities({ baseURL: settings.baseURL, ...folders }) },
  });
  return { run: () => worker.run(), shutdown: () => worker.shutdown(), cached: () => worker.getStatus().numCachedWorkflows };
}

async function main(): Promise<void> {
  const settings = settingsFrom(process.argv[2]);
  quietRuntime();
  const connection = await NativeConnection.connect({
    address: settings.address,
    tls: settings.cluster ? clusterTls(settings.cluster) : undefined,
  });
  const worker = await start(settings, connection);
  process.on('message', (message) => {
    if (message === 'cpu' || message === 'measure') process.send?.(reading(message === 'measure', worker.cached));
    if (message === 'mark') process.send?.({ ...reading(false, worker.cached), monotonicUs: Number(process.hrtime.bigint() / 1000n) });
  });
  await runUntilParentLeaves(worker, connection);
}

if (require.main === module) runChild(main);
