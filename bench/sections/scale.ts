// Scale: 1,000 turns in flight at once on one worker process, then the same on two worker processes
// sharing the task queue. Each turn is the peer benchmark's plan played by the scripted model inside
// the model step (search, read two documents, save a draft, answer: four model steps, four tool
// calls), so the figures are the boundary's and Temporal's, not a model server's. Per configuration:
// turns per second, each turn's latency from its start to its result, the workers' CPU and RSS
// per turn and the dev server's CPU per turn.
import { fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TollgateClient } from '../../client/tollgate-client';
import type { ScriptStep } from '../../common/contract/turn';
import { PROJECT_ROOT } from '../../config/load-config';
import type { BenchContext } from '../context';
import { cacheSizeFromEnv, inLanes, localReadsFromEnv, median, percentile, table, type SectionResult } from '../lib';
import { planConfig } from '../plan-config';
import { clockTicks, processCpuMs, WorkerProcess } from './peers';

/** Turns started at once in each configuration (BENCH_SCALE_TURNS, default 1,000). */
function scaleTurns(): number {
  const raw = process.env.BENCH_SCALE_TURNS ?? '1000';
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`BENCH_SCALE_TURNS must be a whole number ≥ 1, got "${raw}"`);
  return value;
}

/** The plan of the peer benchmark, played by the scripted model. */
export function planScript(id: string): ScriptStep[] {
  return [
    { toolCalls: [{ tool: 'search_local_sources', args: { query: 'refund annual plan' } }] },
    {
      toolCalls: [
        { tool: 'get_document', args: { id: 'refund-policy' } },
        { tool: 'get_document', args: { id: 'pricing-plans' } },
      ],
    },
    { toolCalls: [{ tool: 'save_draft', args: { path: `briefs/${id}.md`, content: `Refunds of annual plans, for ${id}.` } }] },
    { text: `The brief is saved as briefs/${id}.md.` },
  ];
}

interface ScaleRow {
  workers: number;
  turns: number;
  turnsPerSecond: number;
  latencyMedianMs: number;
  latencyP95Ms: number;
  workerCpuMsPerTurn: number;
  serverCpuMsPerTurn: number;
  workerRssMb: number[];
}

export async function scaleSection(context: BenchContext): Promise<SectionResult> {
  const turns = scaleTurns();
  const ticks = clockTicks();
  const serverPid = context.server.process.pid!;
  const folder = path.join(context.folder, 'scale');
  mkdirSync(folder, { recursive: true });
  const bundleFile = path.join(folder, 'bundle.js');
  writeFileSync(bundleFile, context.workflowBundle.code);
  const settings = { address: context.server.address, taskQueue: 'bench-scale', folder, baseURL: 'http://127.0.0.1:9/v1' };
  const cache = cacheSizeFromEnv('BENCH_SCALE_CACHE');
  const spawn = (index: number) =>
    new WorkerProcess(
      `scale worker ${index}`,
      fork(
        path.join(__dirname, '..', 'variant-worker.ts'),
        [JSON.stringify({ ...settings, variant: 'tollgate', bundleFile, maxCachedWorkflows: cache, localReads: localReadsFromEnv() })],
        {
          cwd: PROJECT_ROOT,
          execArgv: ['--expose-gc', '--import', 'tsx'],
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        },
      ),
    );
  const tollgate = await TollgateClient.connect(planConfig(settings));
  const workers: WorkerProcess[] = [];
  const rows: ScaleRow[] = [];
  try {
    const run = async (label: string, count: number) => {
      const latencies: number[] = [];
      const wallMs = await inLanes(count, count, async (index) => {
        const id = `scale-${label}-${index}`;
        const started = performance.now();
        await tollgate.startTurn(
          { taskId: id, prompt: 'refunds', model: { provider: 'scripted', script: planScript(id) } },
          { workflowId: id },
        );
        const result = await tollgate.result(id);
        if (result.status !== 'completed' || result.toolCalls.length !== 4 || result.toolCalls.some((event) => event.status !== 'success'))
          throw new Error(`scale turn ${id} ended ${result.status} with ${result.toolCalls.length} calls`);
        latencies.push(performance.now() - started);
      });
      return { wallMs, latencies };
    };
    for (const count of [1, 2]) {
      while (workers.length < count) {
        const worker = spawn(workers.length + 1);
        workers.push(worker);
        await worker.started();
      }
      await run(`warm-${count}`, 20);
      const cpuBefore = await Promise.all(workers.map((worker) => worker.ask('cpu')));
      const serverBefore = processCpuMs(serverPid, ticks);
      const { wallMs, latencies } = await run(`w${count}`, turns);
      const serverCpuMs = processCpuMs(serverPid, ticks) - serverBefore;
      const after = await Promise.all(workers.map((worker) => worker.ask('measure')));
      const workerCpuMs = after.reduce((sum, reading, index) => sum + reading.cpuMs - cpuBefore[index].cpuMs, 0);
      rows.push({
        workers: count,
        turns,
        turnsPerSecond: (turns * 1000) / wallMs,
        latencyMedianMs: median(latencies),
        latencyP95Ms: percentile(latencies, 0.95),
        workerCpuMsPerTurn: workerCpuMs / turns,
        serverCpuMsPerTurn: serverCpuMs / turns,
        workerRssMb: after.map((reading) => reading.rssBytes! / 1024 / 1024),
      });
    }
  } finally {
    await tollgate.close();
    await Promise.all(workers.map((worker) => worker.stop()));
  }
  const markdown = table(
    [
      'worker processes',
      'turns in flight',
      'turns/s',
      'latency median / p95 s',
      'worker CPU ms/turn (all workers)',
      'server CPU ms/turn',
      'worker RSS MB after (each)',
    ],
    rows.map((row) => [
      row.workers,
      row.turns.toLocaleString('en-US'),
      row.turnsPerSecond.toFixed(1),
      `${(row.latencyMedianMs / 1000).toFixed(1)} / ${(row.latencyP95Ms / 1000).toFixed(1)}`,
      row.workerCpuMsPerTurn.toFixed(0),
      row.serverCpuMsPerTurn.toFixed(0),
      row.workerRssMb.map((rss) => rss.toFixed(0)).join(' / '),
    ]),
  );
  return {
    name: 'scale',
    title: `Scale: ${turns.toLocaleString('en-US')} turns in flight on one worker process and on two`,
    markdown:
      `${markdown}\n\nEach configuration starts ${turns.toLocaleString('en-US')} turns at once (BENCH_SCALE_TURNS) after 20 warm-up turns, ` +
      `each worker's workflow cache ${cache ?? 'the default'} (BENCH_SCALE_CACHE); ` +
      "a turn is the peer benchmark's plan played by the scripted model (four model steps, four tool calls); its latency runs from its start " +
      'to its result. Worker CPU is summed over the worker processes; RSS is read after a garbage collection.',
    data: { rows },
  };
}
