// The worker: it serves the support agent and its tools on the config's task queue. `npm run
// worker` runs it until Ctrl-C, for turns started by `npx tollgate run`, the Temporal CLI or any
// Temporal client; `npm run turn` runs it inside its own process.
import { fileURLToPath } from 'node:url';
import { createWorker, loadConfig, type TollgateConfig } from 'tollgate';
import { support } from './agent.mts';
import { lookupOrder, refundOrder } from './tools.mts';

/** A worker with this project's tools and agents (it connects as the config says). */
export function startWorker(config: TollgateConfig) {
  return createWorker({ config, tools: [lookupOrder, refundOrder], agents: [support] });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const config = loadConfig();
  const worker = await startWorker(config);
  console.log(`Worker on task queue ${config.temporal.taskQueue} at ${config.temporal.address}; Ctrl-C stops it.`);
  await worker.run();
}
