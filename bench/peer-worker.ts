// The peer variant's worker process: @temporalio/ai-sdk's plugin with AI SDK 7's openai-compatible
// provider pointed at the benchmark's loopback model server, the peer workflow, and the tools as
// plain activities. Started by the peer section of `npm run bench` on the project's Node.js and
// packages; answers "cpu" over IPC with its CPU time, and "measure" with its CPU time, RSS and heap
// after a garbage collection.
// Usage: node --expose-gc --import tsx bench/peer-worker.ts '{"address","taskQueue","baseURL","corpus","workspace"[,"cluster"]}'
import path from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { planToolActivities } from './plan-tools';
import { runChild, runUntilParentLeaves } from './child-worker';
import { clusterTls, type Cluster } from '../server/cluster/cluster';

interface Settings {
  address: string;
  taskQueue: string;
  baseURL: string;
  corpus: string;
  workspace: string;
  cluster?: Pick<Cluster, 'namespace' | 'tls'>;
}

function settingsFrom(argument: string | undefined): Settings {
  const settings = JSON.parse(argument ?? '{}') as Partial<Settings>;
  for (const key of ['address', 'taskQueue', 'baseURL', 'corpus', 'workspace'] as const) {
    if (typeof settings[key] !== 'string' || !settings[key]) throw new Error(`bench/peer-worker.ts: the settings lack "${key}"`);
  }
  return settings as Settings;
}

async function main(): Promise<void> {
  const settings = settingsFrom(process.argv[2]);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({
    address: settings.address,
    tls: settings.cluster ? clusterTls(settings.cluster) : undefined,
  });
  const worker = await Worker.create({
    connection,
    namespace: settings.cluster?.namespace,
    taskQueue: settings.taskQueue,
    workflowsPath: path.join(__dirname, 'peer-workflows.ts'),
    activities: planToolActivities({ corpus: settings.corpus, workspace: settings.workspace }),
    plugins: [new AiSdkPlugin({ modelProvider: createOpenAICompatible({ name: 'loopback', baseURL: settings.baseURL }) })],
  });
  process.on('message', (message) => {
    if (message !== 'cpu' && message !== 'measure' && message !== 'mark') return;
    const cpu = process.cpuUsage();
    const cpuMs = (cpu.user + cpu.system) / 1000;
    if (message === 'cpu') return void process.send?.({ cpuMs });
    if (message === 'mark') return void process.send?.({ cpuMs, monotonicUs: Number(process.hrtime.bigint() / 1000n) });
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    const memory = process.memoryUsage();
    process.send?.({ cpuMs, rssBytes: memory.rss, heapUsedBytes: memory.heapUsed, cachedWorkflows: worker.getStatus().numCachedWorkflows });
  });
  await runUntilParentLeaves(worker, connection);
}

runChild(main);
