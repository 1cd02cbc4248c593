import type { TollgateConfig } from '../config/config-schema';
import { probeServer } from '../connection/temporal-connection';
import { createWorker } from './create-worker';

/** Runs a worker against the configured server until SIGINT or SIGTERM; the worker closes its connection and store when it stops. */
export async function runWorker(config: TollgateConfig): Promise<void> {
  const { address, namespace, taskQueue } = config.temporal;
  if ((await probeServer(address, config.temporalProfile)) !== 'temporal') {
    throw new Error(
      `no Temporal server answers at ${address}; start one with \`npm run server\` (or \`tollgate server start\`) or set TEMPORAL_ADDRESS`,
    );
  }
  const worker = await createWorker({ config });
  console.log(`Tollgate worker: task queue ${taskQueue} on ${address} (namespace ${namespace}); Ctrl-C stops it.`);
  await worker.run();
}
