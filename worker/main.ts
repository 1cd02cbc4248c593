// `npm run worker`: runs a Tollgate worker against the configured server until Ctrl-C.
import { loadConfig } from '../config/load-config';
import { runWorker } from './run-worker';

runWorker(loadConfig()).catch((error: Error) => {
  console.error(`worker: ${error.message}`);
  process.exit(1);
});
