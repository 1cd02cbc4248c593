// A benchmark worker in its own process, so that its memory is its own: serves Tollgate's workflows
// and the bench tools, and answers "measure" over IPC with its RSS, heap and workflow cache size.
// Usage: node --expose-gc --import tsx bench/memory-worker.ts '{"address","taskQueue","folder","bundleFile"[,"maxCachedWorkflows"]}'
import { readFileSync } from 'node:fs';
import { NativeConnection } from '@temporalio/worker';
import { createWorker } from '../worker/create-worker';
import { benchHandlers, benchTools } from './bench-tools';
import { benchConfig, quietRuntime } from './context';
import { runChild, runUntilParentLeaves } from './child-worker';

export interface MemoryReading {
  rssBytes: number;
  heapUsedBytes: number;
  cachedWorkflows: number;
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.argv[2]) as {
    address: string;
    taskQueue: string;
    folder: string;
    bundleFile: string;
    maxCachedWorkflows?: number;
  };
  quietRuntime();
  const base = benchConfig(settings.folder, settings.address, settings.taskQueue);
  const config =
    settings.maxCachedWorkflows === undefined
      ? base
      : { ...base, temporal: { ...base.temporal, worker: { ...base.temporal.worker, maxCachedWorkflows: settings.maxCachedWorkflows } } };
  const connection = await NativeConnection.connect({ address: settings.address });
  const worker = await createWorker({
    config,
    connection,
    tools: benchTools(benchHandlers()),
    workflowBundle: { code: readFileSync(settings.bundleFile, 'utf8') },
  });
  process.on('message', (message) => {
    if (message !== 'measure') return;
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    const reading: MemoryReading = {
      rssBytes: process.memoryUsage().rss,
      heapUsedBytes: process.memoryUsage().heapUsed,
      cachedWorkflows: worker.worker.getStatus().numCachedWorkflows,
    };
    process.send?.(reading);
  });
  await runUntilParentLeaves(worker, connection);
}

runChild(main);
