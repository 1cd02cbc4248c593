// `npm run bench:cluster`: the throughput comparison (bare workflows running the same activities
// against Tollgate turns: 3 reads, then 1 reversible write) on the real cluster of
// `npm run cluster` and on the dev server, at 1, 10 and 100 turns in flight, with what each turn
// costs the server: its processes' CPU and, on the cluster, PostgreSQL's commits.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { startCluster, type Cluster } from '../server/cluster/cluster';
import { withBenchContext, type BenchContext } from './context';
import { inLanes, ratio, table, writeResult } from './lib';
import { runOne, type Variant } from './sections/throughput';

const LEVELS = [
  { concurrency: 1, turns: 10 },
  { concurrency: 10, turns: 50 },
  { concurrency: 100, turns: 200 },
];
const VARIANTS: Variant[] = ['bare_4_activities', 'tollgate'];

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Commits of the cluster's two databases so far (pg_stat_database). */
function postgresCommits(): number {
  const port = spawnSync('pg_lsclusters', ['--no-header'], { encoding: 'utf8' }).stdout.trim().split(/\s+/)[2];
  const sql = "SELECT COALESCE(SUM(xact_commit), 0) FROM pg_stat_database WHERE datname IN ('temporal', 'temporal_visibility')";
  const done = spawnSync('runuser', ['-u', 'postgres', '--', 'psql', '-p', port, '-tAc', sql], { encoding: 'utf8' });
  return Number(done.stdout.trim());
}

interface Row {
  server: string;
  concurrency: number;
  variant: Variant;
  turnsPerSecond: number;
  serverCpuMsPerTurn: number;
  commitsPerTurn?: number;
}

async function measure(context: BenchContext, server: string, pids: () => number[], commits?: () => number): Promise<Row[]> {
  const rows: Row[] = [];
  for (const { concurrency, turns } of LEVELS) {
    for (const variant of VARIANTS) {
      const cpuBefore = pids().reduce((sum, pid) => sum + cpuSeconds(pid), 0);
      const commitsBefore = commits?.();
      const wallMs = await inLanes(turns, concurrency, (index) =>
        runOne(context, variant, `cl-${server}-${variant}-${concurrency}-${Date.now()}-${index}`),
      );
      const cpu = pids().reduce((sum, pid) => sum + cpuSeconds(pid), 0) - cpuBefore;
      rows.push({
        server,
        concurrency,
        variant,
        turnsPerSecond: (turns * 1000) / wallMs,
        serverCpuMsPerTurn: (cpu * 1000) / turns,
        ...(commits && commitsBefore !== undefined ? { commitsPerTurn: (commits() - commitsBefore) / turns } : {}),
      });
    }
  }
  return rows;
}

async function main(): Promise<void> {
  const started = performance.now();
  const cluster: Cluster = await startCluster({ log: () => undefined });
  let rows: Row[];
  try {
    const clusterPids = () => [...cluster.processes.values()].map((child) => child.pid!);
    rows = await withBenchContext((context) => measure(context, 'cluster', clusterPids, postgresCommits), { cluster });
  } finally {
    await cluster.stop();
  }
  rows.push(...(await withBenchContext((context) => measure(context, 'dev server', () => [context.server.process.pid!]))));
  const byKey = new Map(rows.map((row) => [`${row.server}/${row.concurrency}/${row.variant}`, row]));
  const markdown = table(
    [
      'server',
      'turns in flight',
      'bare turns/s',
      'Tollgate turns/s',
      'Tollgate vs bare',
      'server CPU ms per Tollgate turn',
      'PostgreSQL commits per Tollgate turn',
    ],
    rows
      .filter((row) => row.variant === 'tollgate')
      .map((row) => {
        const bare = byKey.get(`${row.server}/${row.concurrency}/bare_4_activities`)!;
        return [
          row.server,
          row.concurrency,
          bare.turnsPerSecond.toFixed(1),
          row.turnsPerSecond.toFixed(1),
          ratio(row.turnsPerSecond, bare.turnsPerSecond),
          row.serverCpuMsPerTurn.toFixed(0),
          row.commitsPerTurn === undefined ? '–' : row.commitsPerTurn.toFixed(1),
        ];
      }),
  );
  const seconds = (performance.now() - started) / 1000;
  const header = `Machine: ${os.cpus().length} cores, ${Math.round(os.totalmem() / 1024 ** 3)} GiB, Node ${process.version}; the cluster: 5 server processes on PostgreSQL, TLS on the frontend, 8 shards; one run of each level (no rounds).`;
  console.log(`${header}\n\n${markdown}\n\n(${seconds.toFixed(0)} s)`);
  writeResult('cluster.json', { rows, seconds });
  writeResult('cluster.md', `${header}\n\n${markdown}\n`);
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    console.error(`bench:cluster: ${error.message}`);
    process.exit(1);
  },
);
