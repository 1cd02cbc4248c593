// `npm run cluster [-- --keep]`: builds (once) and starts a Temporal cluster of separate service
// processes on PostgreSQL with TLS on its frontend (server/cluster/), runs one agent turn
// through it with Tollgate unchanged (a worker and a client connecting over TLS, the send approved),
// prints the turn, and stops what it started — unless --keep, which leaves the cluster running
// until Ctrl-C.
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { followTurn } from '../follow-turn';
import { formatTable } from '../format-table';
import { TollgateClient } from '../tollgate-client';
import { loadConfig } from '../../config/load-config';
import { createWorker } from '../../worker/create-worker';
import { clusterClientConfig, startCluster } from '../../server/cluster/cluster';

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { keep: { type: 'boolean', default: false } } });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const started = Date.now();
  const cluster = await startCluster();
  console.log(
    `Cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s: frontend ${cluster.address} (TLS), ${[...cluster.processes.keys()].join(', ')} on PostgreSQL; logs in ${cluster.folder}`,
  );
  const config = clusterClientConfig(loadConfig(), cluster);
  let code: number;
  try {
    const worker = await createWorker({ config });
    const client = await TollgateClient.connect(config);
    try {
      const result = await worker.runUntil(async () => {
        const handle = await client.startTurn({ taskId: `cluster-${Date.now().toString(36)}`, prompt: 'How long are backups kept?' });
        console.log(`Started workflow ${handle.workflowId} on the cluster.`);
        return followTurn(client, handle.workflowId, { mode: 'approve' });
      });
      console.log(`\nStatus: ${result.status} after ${result.steps} model steps`);
      console.log(
        formatTable(
          ['tool', 'effect', 'status', 'executions'],
          result.toolCalls.map((event) => [event.tool, event.effect, event.status, String(event.executions)]),
        ),
      );
      code = result.status === 'completed' ? 0 : 1;
    } finally {
      await client.close();
    }
    if (values.keep) {
      console.log(`The cluster keeps running at ${cluster.address} (CA ${cluster.tls.caFile}); Ctrl-C stops it.`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
  } finally {
    await cluster.stop();
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`cluster: ${error.message}`);
    process.exit(1);
  },
);
