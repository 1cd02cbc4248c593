// `npm run server`: runs the embedded Temporal dev server in the foreground until Ctrl-C.
import { loadConfig } from '../config/load-config';
import { ensureServer } from './dev-server';

async function main(): Promise<void> {
  const config = loadConfig();
  const lease = await ensureServer(config);
  if (!lease.started) {
    console.log(`A Temporal server already answers at ${lease.address}; it is used as it is and nothing was started.`);
    return;
  }
  console.log(`Temporal dev server: ${lease.address} (namespace ${lease.namespace})`);
  console.log(`Web UI: ${lease.uiUrl}`);
  console.log(`State: ${config.temporal.devServer.dbFile}; log: ${config.temporal.devServer.logFile}`);
  console.log('Press Ctrl-C to stop it.');
  let stopping = false;
  const stop = async () => {
    stopping = true;
    await lease.started?.stop();
    console.log('Temporal dev server stopped.');
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  lease.started.process.once('exit', (code) => {
    if (stopping) return;
    console.error(`the Temporal dev server exited by itself (code ${code}); see ${config.temporal.devServer.logFile}`);
    process.exit(1);
  });
}

main().catch((error: Error) => {
  console.error(`server: ${error.message}`);
  process.exit(1);
});
