// `npm run bench:cluster`: the peer benchmark's runs (Tollgate, @temporalio/ai-sdk and the bare
// loop, streaming and whole, in interleaved rounds at 1, 10 and 100 turns in flight) on the real
// cluster of `npm run cluster` and then on the dev server, with what each turn costs the server:
// its processes' CPU and, on the cluster, PostgreSQL's commits with the cluster's own idle commits
// left out. Sizes as the peer section's (BENCH_PEERS_TURNS, BENCH_PEERS_ROUNDS, BENCH_PEERS_FULL).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../connection/ports';
import { startDevServer } from '../server/dev-server';
import { clusterConnection, startCluster } from '../server/cluster/cluster';
import { bundleBenchWorkflows, quietRuntime } from './context';
import { median, sleep, table, writeResult } from './lib';
import {
  clockTicks,
  peerFigures,
  peerLevels,
  peerMarkdown,
  peerRounds,
  processCpuMs,
  runPeers,
  type PeerFigures,
  type PeerMeasure,
  type PeerServer,
  type PeerVariant,
} from './sections/peers';

/** Commits of the cluster's two databases so far (pg_stat_database), by database. */
function postgresCommits(): { history: number; visibility: number } {
  const port = spawnSync('pg_lsclusters', ['--no-header'], { encoding: 'utf8' }).stdout.trim().split(/\s+/)[2];
  const sql = "SELECT datname, xact_commit FROM pg_stat_database WHERE datname IN ('temporal', 'temporal_visibility')";
  const done = spawnSync('runuser', ['-u', 'postgres', '--', 'psql', '-p', port, '-tAF', ' ', '-c', sql], { encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`bench:cluster: could not read PostgreSQL's commit counts: ${done.stderr}`);
  const counts = Object.fromEntries(
    done.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' ')),
  );
  return { history: Number(counts.temporal ?? 0), visibility: Number(counts.temporal_visibility ?? 0) };
}

const totalCommits = () => {
  const { history, visibility } = postgresCommits();
  return history + visibility;
};

/** The cluster's commits per second while nothing runs on it (membership, shard leases, queues). */
async function idleCommitRate(seconds = 10): Promise<{ total: number; history: number; visibility: number }> {
  const before = postgresCommits();
  await sleep(seconds * 1000);
  const after = postgresCommits();
  const history = (after.history - before.history) / seconds;
  const visibility = (after.visibility - before.visibility) / seconds;
  return { total: history + visibility, history, visibility };
}

const SIDE_BY_SIDE: PeerVariant[] = ['tollgate', 'tollgate_whole', 'bare_loop_stream', 'bare_loop'];

async function main(): Promise<void> {
  const started = performance.now();
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-cluster-'));
  const ticks = clockTicks();
  const levels = peerLevels();
  const rounds = peerRounds();
  const bundle = await bundleBenchWorkflows();
  const results: Array<{ server: string; measure: PeerMeasure; figures: PeerFigures; idle?: object }> = [];
  try {
    const cluster = await startCluster({ log: (line) => console.log(line) });
    try {
      const connection = await clusterConnection(cluster);
      try {
        // The cluster settles (shards acquired, queues loaded) before its idle rate is taken.
        await sleep(5_000);
        const idle = await idleCommitRate();
        console.log(`cluster idle: ${idle.total.toFixed(1)} PostgreSQL commits/s`);
        const server: PeerServer = {
          name: 'cluster',
          address: cluster.address,
          client: new Client({ connection, namespace: cluster.namespace }),
          cluster,
          cpuMs: () => [...cluster.processes.values()].reduce((sum, child) => sum + processCpuMs(child.pid!, ticks), 0),
          commits: totalCommits,
          idleCommitsPerSecond: idle.total,
        };
        const measure = await runPeers(server, { folder: path.join(folder, 'cluster'), bundleCode: bundle.code, levels, rounds });
        results.push({ server: 'cluster', measure, figures: peerFigures(measure), idle });
      } finally {
        await connection.close();
      }
    } finally {
      await cluster.stop();
    }
    const dev = await startDevServer({
      address: `127.0.0.1:${await freePort()}`,
      namespace: 'default',
      dbFile: path.join(folder, 'temporal.db'),
      logFile: path.join(folder, 'server.log'),
    });
    try {
      const connection = await Connection.connect({ address: dev.address });
      try {
        const server: PeerServer = {
          name: 'dev server',
          address: dev.address,
          client: new Client({ connection }),
          cpuMs: () => processCpuMs(dev.process.pid!, ticks),
        };
        const measure = await runPeers(server, { folder: path.join(folder, 'dev'), bundleCode: bundle.code, levels, rounds });
        results.push({ server: 'dev server', measure, figures: peerFigures(measure) });
      } finally {
        await connection.close();
      }
    } finally {
      await dev.stop();
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }

  const labels: Record<string, string> = {
    tollgate: 'Tollgate, streaming',
    tollgate_whole: 'Tollgate, whole',
    bare_loop_stream: 'bare loop, streaming',
    bare_loop: 'bare loop, whole',
  };
  const sideBySide = table(
    [
      'server',
      'variant',
      'latency median ms at 1',
      'turns/s at 1 / 10 / 100',
      'server CPU ms/turn at 1 / 10 / 100',
      'PostgreSQL commits/turn at 1 / 10 / 100',
    ],
    results.flatMap(({ server, figures }) =>
      SIDE_BY_SIDE.map((variant) => {
        const at = (pick: (level: NonNullable<ReturnType<PeerFigures[PeerVariant]['levels']['get']>>) => string) =>
          [1, 10, 100].map((concurrency) => {
            const level = figures[variant].levels.get(concurrency);
            return level ? pick(level) : '–';
          });
        return [
          server,
          labels[variant],
          at((level) => median(level.latencies).toFixed(0))[0],
          at((level) => median(level.rates).toFixed(1)).join(' / '),
          at((level) => median(level.serverCpuMsPerTurn).toFixed(0)).join(' / '),
          at((level) => (level.commitsPerTurn ? median(level.commitsPerTurn).toFixed(1) : '–')).join(' / '),
        ];
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const idle = results.find((result) => result.idle)?.idle as { total: number; history: number; visibility: number } | undefined;
  const header =
    `Machine: ${os.cpus().length} cores, ${Math.round(os.totalmem() / 1024 ** 3)} GiB, Node ${process.version}; the cluster: 5 server ` +
    `processes (frontend with TLS, matching, worker, two history hosts, 8 shards) on PostgreSQL; its idle commits ` +
    `(${idle ? `${idle.total.toFixed(1)}/s: ${idle.history.toFixed(1)} history database, ${idle.visibility.toFixed(1)} visibility` : '–'}) left out of each run's.`;
  const sections = results.map(
    ({ server, measure, figures }) =>
      `### ${server}\n\n${peerMarkdown(measure, figures, {
        serverName: server === 'cluster' ? 'Cluster' : 'Dev server',
        serverDb: server === 'cluster' ? 'PostgreSQL 15, 5 processes' : 'SQLite file',
        nodes: `every worker on Node ${process.version.slice(1)}`,
      })}`,
  );
  const markdown = [header, '', sideBySide, '', ...sections].join('\n');
  console.log(`${markdown}\n\n(${seconds.toFixed(0)} s)`);
  writeResult('cluster.json', { seconds, idle, results: results.map(({ server, measure }) => ({ server, ...measure })) });
  writeResult('cluster.md', `${markdown}\n`);
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    console.error(`bench:cluster: ${error.message}`);
    process.exit(1);
  },
);
