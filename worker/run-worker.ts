import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { TollgateConfig } from '../config/config-schema';
import { ensureSearchAttributes, probeServer } from '../server/dev-server';
import { createWorker } from './create-worker';

/** Runs a worker against the configured server until SIGINT or SIGTERM, registering the search attributes first. */
export async function runWorker(config: TollgateConfig): Promise<void> {
  const { address, namespace, taskQueue } = config.temporal;
  if ((await probeServer(address)) !== 'temporal') {
    throw new Error(`no Temporal server answers at ${address}; start one with \`npm run server\` (or \`tollgate server start\`) or set TEMPORAL_ADDRESS`);
  }
  const admin = await Connection.connect({ address });
  await ensureSearchAttributes(admin, namespace);
  await admin.close();
  const connection = await NativeConnection.connect({ address });
  const worker = await createWorker({ config, connection });
  console.log(`Tollgate worker: task queue ${taskQueue} on ${address} (namespace ${namespace}); Ctrl-C stops it.`);
  await worker.run();
  await connection.close();
}
