// `npm run worker`: runs a Tollgate worker against the configured server until Ctrl-C.
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../config/load-config';
import { ensureSearchAttributes, probeServer } from '../server/dev-server';
import { createWorker } from './create-worker';

async function main(): Promise<void> {
  const config = loadConfig();
  const { address, namespace, taskQueue } = config.temporal;
  if ((await probeServer(address)) !== 'temporal') {
    throw new Error(`no Temporal server answers at ${address}; start one with \`npm run server\` or set TEMPORAL_ADDRESS`);
  }
  const client = await Connection.connect({ address });
  await ensureSearchAttributes(client, namespace);
  await client.close();
  const connection = await NativeConnection.connect({ address });
  const worker = await createWorker({ config, connection });
  console.log(`Tollgate worker: task queue ${taskQueue} on ${address} (namespace ${namespace}); Ctrl-C stops it.`);
  await worker.run();
  await connection.close();
}

main().catch((error: Error) => {
  console.error(`worker: ${error.message}`);
  process.exit(1);
});
