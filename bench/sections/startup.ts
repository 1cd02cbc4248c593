// Item 6 of the package work: how long Tollgate takes to start, from its sources (through the
// development loader, bundling its workflows as a worker starts) against the built package
// (dist/, the prebuilt workflow bundles), and how big the packed package is.
// Worker cold start: from spawning the process to the first workflow poll the server saw (its
// task queue lists the worker as a poller). `tollgate --help`: spawn to exit.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { PROJECT_ROOT } from '../../config/load-config';
import type { BenchContext } from '../context';
import { median, percentile, table, type SectionResult } from '../lib';

const RUNS = 5;
const TSX = ['--import', 'tsx'];

interface Variant {
  name: string;
  help: string[];
  worker: string[];
}

const VARIANTS: Variant[] = [
  {
    name: 'from source (tsx, bundled at start)',
    help: [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), '--help'],
    worker: [...TSX, path.join(PROJECT_ROOT, 'bench', 'cold-worker.cjs'), path.join(PROJECT_ROOT, 'index.ts')],
  },
  {
    name: 'built package (dist/, prebuilt bundle)',
    help: [path.join(PROJECT_ROOT, 'dist', 'client', 'cli.js'), '--help'],
    worker: [path.join(PROJECT_ROOT, 'bench', 'cold-worker.cjs'), path.join(PROJECT_ROOT, 'dist', 'index.js')],
  },
];

function build(): void {
  const built = spawnSync(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'build.mjs')], { cwd: PROJECT_ROOT, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`npm run build failed:\n${built.stdout}\n${built.stderr}`);
}

async function helpMs(args: string[]): Promise<number> {
  const started = performance.now();
  const done = spawnSync(process.execPath, args, { cwd: PROJECT_ROOT, encoding: 'utf8' });
  const ms = performance.now() - started;
  if (done.status !== 0 || !/Usage: tollgate/.test(done.stdout)) throw new Error(`tollgate --help failed: ${done.stderr}`);
  return ms;
}

async function coldStartMs(context: BenchContext, args: string[], run: number): Promise<{ ms: number; workflowCode: string }> {
  const taskQueue = `bench-cold-${run}-${Date.now()}`;
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-cold-'));
  const started = performance.now();
  const child = spawn(process.execPath, [...args, context.server.address, taskQueue, folder], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    for (;;) {
      const { pollers } = await context.client.workflowService.describeTaskQueue({
        namespace: context.config.temporal.namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      if ((pollers ?? []).length > 0) break;
      if (child.exitCode !== null) throw new Error(`the cold worker exited (${child.exitCode}) before polling:\n${output}`);
      if (performance.now() - started > 120_000) throw new Error(`the cold worker did not poll within 120 s:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const ms = performance.now() - started;
    const workflowCode = /"workflowCode":"([^"]+)"/.exec(output)?.[1] ?? '?';
    return { ms, workflowCode };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

function packedSize(): { size: number; unpackedSize: number; files: number; bundles: number } {
  const packed = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PROJECT_ROOT, encoding: 'utf8' });
  if (packed.status !== 0) throw new Error(`npm pack --dry-run failed: ${packed.stderr}`);
  const [entry] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{
    size: number;
    unpackedSize: number;
    files: Array<{ path: string; size: number }>;
  }>;
  const bundles = entry.files.filter((file) => file.path.startsWith('dist/workflow-bundles/')).reduce((sum, file) => sum + file.size, 0);
  return { size: entry.size, unpackedSize: entry.unpackedSize, files: entry.files.length, bundles };
}

/** The wall time of the last `npm test`, from vitest's JSON report, when there is one. */
function lastTestRun(): { seconds: number; tests: number } | undefined {
  const file = path.join(PROJECT_ROOT, 'test-output', 'vitest-results.json');
  if (!existsSync(file)) return undefined;
  const report = JSON.parse(readFileSync(file, 'utf8')) as {
    startTime: number;
    numTotalTests: number;
    testResults: Array<{ endTime: number }>;
  };
  const ended = Math.max(...report.testResults.map((result) => result.endTime));
  return { seconds: Math.round((ended - report.startTime) / 1000), tests: report.numTotalTests };
}

export async function startupSection(context: BenchContext): Promise<SectionResult> {
  build();
  const rows: Array<Array<string | number>> = [];
  const data: Record<string, unknown> = {};
  for (const variant of VARIANTS) {
    const help: number[] = [];
    const cold: number[] = [];
    const codes = new Set<string>();
    for (let run = 0; run < RUNS; run++) {
      help.push(await helpMs(variant.help));
      const started = await coldStartMs(context, variant.worker, run);
      cold.push(started.ms);
      codes.add(started.workflowCode);
    }
    const ms = (value: number) => Math.round(value);
    rows.push([
      variant.name,
      `${ms(median(cold))} / ${ms(percentile(cold, 0.95))}`,
      `${ms(median(help))} / ${ms(percentile(help, 0.95))}`,
      [...codes].join(', '),
    ]);
    data[variant.name] = { coldStartMs: cold, helpMs: help, workflowCode: [...codes] };
  }
  const size = packedSize();
  const tests = lastTestRun();
  data.packed = size;
  data.lastTestRun = tests;
  const kib = (bytes: number) => `${Math.round(bytes / 1024).toLocaleString('en')} KiB`;
  const markdown = [
    table(
      ['Tollgate', 'worker cold start median / p95 ms (spawn to first poll)', '`tollgate --help` median / p95 ms', 'workflow code'],
      rows,
    ),
    '',
    table(
      ['packed package', 'tarball', 'unpacked', 'files', 'of it, the four prebuilt workflow bundles'],
      [['`npm pack`', kib(size.size), kib(size.unpackedSize), size.files, kib(size.bundles)]],
    ),
    '',
    `${RUNS} runs of each on one dev server.` +
      (tests ? ` The last \`npm test\` here took ${tests.seconds} s for ${tests.tests} tests (test-output/vitest-results.json).` : ''),
  ].join('\n');
  return { name: 'startup', title: 'Start time and package size: from source against the built package', markdown, data };
}
