// A worker process as `npm run worker` starts one, for the start-time benchmark (bench/sections/startup.ts):
// node [--import tsx] bench/cold-worker.cjs <Tollgate entry: index.ts or dist/index.js> <address> <task queue> <folder>
// It prints where its workflow code came from once the worker runs; the benchmark stops it.
'use strict';
const path = require('node:path');

const [entry, address, taskQueue, folder] = process.argv.slice(2);
const { createWorker, parseConfig } = require(entry);
const config = parseConfig(
  {
    temporal: { address, taskQueue },
    store: { sqliteFile: path.join(folder, 'idempotency.db') },
    workspace: path.join(folder, 'workspace'),
    corpus: path.join(__dirname, '..', 'examples', 'corpus'),
  },
  { source: 'bench cold start', baseDir: folder, env: {} },
);
createWorker({ config }).then(
  (worker) => {
    console.log(JSON.stringify({ workflowCode: worker.workflowCode.from }));
    process.once('SIGTERM', () => worker.shutdown());
    return worker.run();
  },
  (error) => {
    console.error(`cold-worker: ${error.stack ?? error}`);
    process.exit(1);
  },
);
