// The same agent turn (search, read two documents, save a draft, answer) as Tollgate, as
// Temporal's own AI SDK integration (@temporalio/ai-sdk on AI SDK 7, bench/peer-worker.ts) and as
// the bare agent loop, each in two modes compared like against like: streaming (every model step
// streams its reply) and whole replies. One loopback model server with one token timing serves
// every variant over HTTP; its pacing is counted apart. Each worker runs in its own process (the
// project's Node.js and packages), so its CPU time is its own; the server's CPU comes from /proc.
// Rounds are interleaved and rotated (A B C, B C A, ...), and each ratio is the median of the
// per-round ratios with its range. The same runs go against a cluster (bench/cluster.ts).
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { startLoopbackModelServer } from '../../client/demo/loopback-model-server';
import { TollgateClient } from '../../client/tollgate-client';
import type { AgentTurnResult } from '../../common/contract/turn';
import { PROJECT_ROOT } from '../../config/load-config';
import { clusterClientConfig, type Cluster } from '../../server/cluster/cluster';
import { benchServerDb, type BenchContext } from '../context';
import {
  inLanes,
  judge,
  localReadsFromEnv,
  median,
  percentile,
  rotated,
  spread,
  spreadText,
  table,
  type SectionResult,
  type Spread,
} from '../lib';
import { PLAN_CORPUS, PLAN_MODEL, PLAN_MODEL_WHOLE, planConfig } from '../plan-config';
import type { VariantReading } from '../variant-worker';

/** Each implementation in each mode: Tollgate, @temporalio/ai-sdk and the bare loop, streaming and whole. */
export type PeerVariant = 'tollgate' | 'ai_sdk_stream' | 'bare_loop_stream' | 'tollgate_whole' | 'ai_sdk' | 'bare_loop';
type Family = 'tollgate' | 'ai_sdk' | 'bare_loop';
type Mode = 'streaming' | 'whole';
const MODES: Record<Mode, Record<Family, PeerVariant>> = {
  streaming: { tollgate: 'tollgate', ai_sdk: 'ai_sdk_stream', bare_loop: 'bare_loop_stream' },
  whole: { tollgate: 'tollgate_whole', ai_sdk: 'ai_sdk', bare_loop: 'bare_loop' },
};
const VARIANTS: PeerVariant[] = [...Object.values(MODES.streaming), ...Object.values(MODES.whole)];
const familyOf = (variant: PeerVariant): Family => variant.replace(/_whole$|_stream$/, '') as Family;
const streams = (variant: PeerVariant) => Object.values(MODES.streaming).includes(variant);
const isTollgate = (variant: PeerVariant) => familyOf(variant) === 'tollgate';
const LABELS: Record<PeerVariant, string> = {
  tollgate: 'Tollgate, streaming (the default)',
  ai_sdk_stream: '@temporalio/ai-sdk 1.23, streaming (streamText, workflow stream)',
  bare_loop_stream: 'bare agent loop, streaming',
  tollgate_whole: 'Tollgate, whole replies (stream: false)',
  ai_sdk: '@temporalio/ai-sdk 1.23, whole replies (generateText)',
  bare_loop: 'bare agent loop, whole replies',
};
const PROMPT = 'What is our refund policy for annual plans?';
const PLAN_TOOLS = ['search_local_sources', 'get_document', 'save_draft'];
const CONCURRENCY = [1, 10, 100];

/** A whole number ≥ `min` from the environment, or the default; anything else is an error naming the variable. */
function envNumber(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return value;
}

/** One level of load: turns in flight, turns per round, and the variants measured at it. */
export interface PeerLevel {
  concurrency: number;
  turns: number;
  variants: PeerVariant[];
}

/**
 * Turns per round at 1, 10 and 100 in flight (BENCH_PEERS_TURNS, default "4,20,100"). At 100 in
 * flight only Tollgate and the bare loop run (the throughput goal is against the bare loop), unless
 * BENCH_PEERS_FULL=1 adds @temporalio/ai-sdk there too (a longer run).
 */
export function peerLevels(): PeerLevel[] {
  const raw = process.env.BENCH_PEERS_TURNS ?? '4,20,100';
  const values = raw.split(',').map((part) => Number(part.trim()));
  if (values.length !== CONCURRENCY.length || values.some((value) => !Number.isInteger(value) || value < 1)) {
    throw new Error(`BENCH_PEERS_TURNS must be three whole numbers ≥ 1 (turns per round at 1, 10 and 100 in flight), got "${raw}"`);
  }
  const full = process.env.BENCH_PEERS_FULL === '1';
  return CONCURRENCY.map((concurrency, index) => ({
    concurrency,
    turns: values[index],
    variants: concurrency < 100 || full ? VARIANTS : VARIANTS.filter((variant) => familyOf(variant) !== 'ai_sdk'),
  }));
}

/** Rounds per level (BENCH_PEERS_ROUNDS, default 5, at least 3). */
export function peerRounds(): number {
  return envNumber('BENCH_PEERS_ROUNDS', 5, 3);
}

/**
 * BENCH_PEERS_CPU_PROF=<folder>: every worker writes V8 CPU profiles there when it exits (one per
 * thread), and `marks.json` gives each worker's monotonic clock when the warm-up ended, so that
 * `bench/profile-summary.ts` counts only the samples after it.
 */
function profileFlags(): string[] {
  const folder = process.env.BENCH_PEERS_CPU_PROF;
  return folder ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(folder)] : [];
}

/** CPU time of a process and its waited-for children, in ms, from /proc/<pid>/stat. */
export function processCpuMs(pid: number, ticksPerSecond: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14-17 of stat (utime, stime, cutime, cstime); the slice starts at field 3.
  const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
  return (ticks * 1000) / ticksPerSecond;
}

export function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** One implementation's worker process and the IPC questions it answers. */
export class WorkerProcess {
  private readonly replies: Array<(reading: VariantReading) => void> = [];
  private readonly exited: Promise<void>;
  private readonly ready: Promise<void>;

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    this.ready = new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the ${name} worker exited (code ${code}) before it was ready`)));
      child.on('message', (message) => {
        if (message === 'ready') return resolve();
        this.replies.shift()?.(message as VariantReading);
      });
    });
  }

  async started(timeoutMs = 180_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the ${this.name} worker was not ready in ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      await Promise.race([this.ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** "cpu": its CPU time; "measure": CPU time, RSS and heap after a garbage collection; "mark": CPU time and its monotonic clock. */
  ask(question: 'cpu' | 'measure' | 'mark'): Promise<VariantReading> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${this.name} worker did not answer "${question}"`)), 60_000);
      this.replies.push((reading) => {
        clearTimeout(timer);
        resolve(reading);
      });
      this.child.send(question);
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  async stop(): Promise<void> {
    if (this.child.connected) this.child.disconnect();
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    await this.exited;
    clearTimeout(killer);
  }
}

/** One variant's turns in one round at one level, and what they cost. */
export interface PeerRun {
  variant: PeerVariant;
  concurrency: number;
  round: number;
  turns: number;
  wallMs: number;
  workerCpuMs: number;
  serverCpuMs: number;
  /** Persistence commits meanwhile (a cluster's PostgreSQL), the server's own background left out. */
  commits?: number;
  latenciesMs: number[];
  /** The model server's pacing between streamed tokens meanwhile, summed over the turns. */
  pacedMs: number;
}

interface HistoryFigures {
  events: number;
  bytes: number;
  activities: number;
  workflowTasks: number;
  signals: number;
  /** Encoded bytes per kind of event (an activity's events by its type, a marker by its name). */
  parts: Record<string, number>;
}

/** The kind an event is counted under in the history breakdown: its type, with the activity or marker it belongs to. */
function eventKind(event: temporal.api.history.v1.IHistoryEvent, activityOf: Map<string, string>): string {
  const type = temporal.api.enums.v1.EventType[event.eventType ?? 0].replace(/^EVENT_TYPE_/, '').toLowerCase();
  const scheduled = event.activityTaskScheduledEventAttributes;
  if (scheduled) {
    activityOf.set(String(event.eventId), scheduled.activityType?.name ?? '?');
    return `activity ${scheduled.activityType?.name} input`;
  }
  const scheduledId =
    event.activityTaskStartedEventAttributes?.scheduledEventId ??
    event.activityTaskCompletedEventAttributes?.scheduledEventId ??
    event.activityTaskFailedEventAttributes?.scheduledEventId;
  if (scheduledId !== undefined && scheduledId !== null) {
    const name = activityOf.get(String(scheduledId)) ?? '?';
    return event.activityTaskCompletedEventAttributes
      ? `activity ${name} result`
      : `activity ${name} ${type.replace(/^activity_task_/, '')}`;
  }
  if (event.markerRecordedEventAttributes) return `marker ${event.markerRecordedEventAttributes.markerName}`;
  return type;
}

/** Encoded bytes of each kind of event in one history. */
function historyParts(events: temporal.api.history.v1.IHistoryEvent[]): Record<string, number> {
  const parts: Record<string, number> = {};
  const activityOf = new Map<string, string>();
  for (const event of events) {
    const kind = eventKind(event, activityOf);
    parts[kind] = (parts[kind] ?? 0) + temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
  }
  return parts;
}

function eventCount(events: temporal.api.history.v1.IHistoryEvent[], type: temporal.api.enums.v1.EventType): number {
  return events.filter((event) => event.eventType === type).length;
}

/** The server the peer runs go against: the dev server, or a cluster reached over TLS. */
export interface PeerServer {
  name: string;
  address: string;
  client: Client;
  /** A cluster's address, namespace and TLS, which the workers and clients connect with. */
  cluster?: Pick<Cluster, 'address' | 'namespace' | 'tls'>;
  /** The CPU ms the server's processes have used so far. */
  cpuMs(): number;
  /** Persistence commits so far (a cluster's PostgreSQL), when the server has them. */
  commits?(): number;
  /** Commits per second the server makes on its own, idle: left out of each run's commits. */
  idleCommitsPerSecond?: number;
}

/** What the peer runs found: each run, and the histories of the turns at 1 in flight. */
export interface PeerMeasure {
  levels: PeerLevel[];
  rounds: number;
  runs: PeerRun[];
  histories: Record<PeerVariant, HistoryFigures[]>;
}

/**
 * Starts a worker process per implementation (both modes of one implementation share it), warms
 * each variant up, and runs every level's rounds, the variants interleaved in a rotated order.
 */
export async function runPeers(
  server: PeerServer,
  { folder, bundleCode, levels, rounds }: { folder: string; bundleCode: string; levels: PeerLevel[]; rounds: number },
): Promise<PeerMeasure> {
  const model = await startLoopbackModelServer({ delayMs: 0 });
  const bundleFile = path.join(folder, 'peers-workflow-bundle.js');
  mkdirSync(folder, { recursive: true });
  writeFileSync(bundleFile, bundleCode);
  // A cluster keeps its state between runs: every run has task queues (and so deployments) of its own.
  const run = Date.now().toString(36);
  const queues: Record<Family, string> = {
    tollgate: `peers-tollgate-${run}`,
    ai_sdk: `peers-ai-sdk-${run}`,
    bare_loop: `peers-bare-${run}`,
  };
  // Every worker runs on this Node.js, with tsx and the packages of the project's node_modules.
  const spawnWorker = (script: string, settings: object) =>
    fork(path.join(__dirname, '..', script), [JSON.stringify({ ...settings, cluster: server.cluster })], {
      cwd: PROJECT_ROOT,
      execArgv: ['--expose-gc', '--import', 'tsx', ...profileFlags()],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
  const spawnRoot = (variant: 'tollgate' | 'bare') =>
    spawnWorker('variant-worker.ts', {
      variant,
      address: server.address,
      taskQueue: queues[variant === 'bare' ? 'bare_loop' : 'tollgate'],
      folder: path.join(folder, variant),
      baseURL: model.baseURL,
      bundleFile,
      ...(variant === 'tollgate' ? { localReads: localReadsFromEnv() } : {}),
    });
  const workers: Record<Family, WorkerProcess> = {
    tollgate: new WorkerProcess('tollgate', spawnRoot('tollgate')),
    bare_loop: new WorkerProcess('bare_loop', spawnRoot('bare')),
    ai_sdk: new WorkerProcess(
      'ai_sdk',
      spawnWorker('peer-worker.ts', {
        address: server.address,
        taskQueue: queues.ai_sdk,
        baseURL: model.baseURL,
        corpus: PLAN_CORPUS,
        workspace: path.join(folder, 'ai-sdk', 'workspace'),
      }),
    ),
  };
  const plain = planConfig({
    folder: path.join(folder, 'tollgate'),
    address: server.address,
    taskQueue: queues.tollgate,
    baseURL: model.baseURL,
  });
  const tollgate = await TollgateClient.connect(server.cluster ? clusterClientConfig(plain, server.cluster) : plain);
  try {
    await Promise.all(Object.values(workers).map((worker) => worker.started()));
    const client = server.client;
    const checkAnswer = (variant: PeerVariant, id: string, answer: string | undefined, toolCalls: number) => {
      if (toolCalls !== 4 || !answer?.includes('The brief is saved as'))
        throw new Error(
          `peer turn ${id} (${LABELS[variant]}) made ${toolCalls} tool calls and answered ${JSON.stringify(answer?.slice(0, 200))}`,
        );
    };
    const runTurn = async (variant: PeerVariant, id: string): Promise<number> => {
      const started = performance.now();
      if (isTollgate(variant)) {
        const model = variant === 'tollgate' ? PLAN_MODEL : PLAN_MODEL_WHOLE;
        await tollgate.startTurn({ taskId: id, prompt: PROMPT, model, tools: PLAN_TOOLS }, { workflowId: id });
        const result: AgentTurnResult = await tollgate.result(id);
        if (result.status !== 'completed' || result.toolCalls.some((event) => event.status !== 'success'))
          throw new Error(`peer turn ${id} (${LABELS[variant]}) ended ${result.status}`);
        checkAnswer(variant, id, result.answer, result.toolCalls.length);
      } else {
        const stream = streams(variant) ? { stream: true } : {};
        const [type, input] =
          familyOf(variant) === 'ai_sdk'
            ? ['peerAgentTurn', { taskId: id, prompt: PROMPT, model: 'scripted', ...stream }]
            : ['bareAgentPlan', { taskId: id, prompt: PROMPT, ...stream }];
        const result = await client.workflow.execute(type, { taskQueue: queues[familyOf(variant)], workflowId: id, args: [input] });
        checkAnswer(variant, id, result.answer, result.toolCalls);
      }
      return performance.now() - started;
    };

    // Warm-up: every worker loads its workflow code, providers and store before anything counts.
    for (const variant of VARIANTS) for (let index = 0; index < 2; index++) await runTurn(variant, `peers-warm-${run}-${variant}-${index}`);
    const profiles = process.env.BENCH_PEERS_CPU_PROF;
    if (profiles) {
      const marks = await Promise.all(
        (Object.keys(workers) as Family[]).map(async (family) => [
          workers[family].pid,
          { variant: `${family} (both modes)`, monotonicUs: (await workers[family].ask('mark')).monotonicUs },
        ]),
      );
      writeFileSync(path.join(path.resolve(profiles), 'marks.json'), JSON.stringify(Object.fromEntries(marks), null, 2));
    }

    const runs: PeerRun[] = [];
    const sampleIds = Object.fromEntries(VARIANTS.map((variant) => [variant, [] as string[]])) as Record<PeerVariant, string[]>;
    for (const level of levels) {
      for (let round = 0; round < rounds; round++) {
        for (const variant of rotated(level.variants, round)) {
          const worker = workers[familyOf(variant)];
          const latenciesMs: number[] = [];
          const workerBefore = await worker.ask('cpu');
          const serverBefore = server.cpuMs();
          const commitsBefore = server.commits?.();
          const pacedBefore = model.pacedMs;
          const wallMs = await inLanes(level.turns, level.concurrency, async (index) => {
            const id = `peers-${run}-${variant}-${level.concurrency}-${round}-${index}`;
            latenciesMs.push(await runTurn(variant, id));
            if (level.concurrency === 1) sampleIds[variant].push(id);
          });
          const idleCommits = ((server.idleCommitsPerSecond ?? 0) * wallMs) / 1000;
          runs.push({
            variant,
            concurrency: level.concurrency,
            round,
            turns: level.turns,
            wallMs,
            workerCpuMs: (await worker.ask('cpu')).cpuMs - workerBefore.cpuMs,
            serverCpuMs: server.cpuMs() - serverBefore,
            ...(commitsBefore === undefined ? {} : { commits: Math.max(0, server.commits!() - commitsBefore - idleCommits) }),
            latenciesMs,
            pacedMs: model.pacedMs - pacedBefore,
          });
        }
      }
    }
    const history = async (id: string): Promise<HistoryFigures> => {
      const handle = client.workflow.getHandle(id);
      const description = await handle.describe();
      const fetched = await handle.fetchHistory();
      const events = fetched.events ?? [];
      const keep = process.env.BENCH_PEERS_HISTORY_DIR;
      if (keep) {
        mkdirSync(keep, { recursive: true });
        writeFileSync(path.join(keep, `${id}.json`), historyToJSON(fetched));
      }
      const types = temporal.api.enums.v1.EventType;
      return {
        events: description.historyLength,
        bytes: description.historySize ?? Number.NaN,
        activities: eventCount(events, types.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
        workflowTasks: eventCount(events, types.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
        signals: eventCount(events, types.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
        parts: historyParts(events),
      };
    };
    const histories = Object.fromEntries(
      await Promise.all(
        VARIANTS.map(async (variant) => [variant, await Promise.all(sampleIds[variant].slice(0, 5).map(history))] as const),
      ),
    ) as Record<PeerVariant, HistoryFigures[]>;
    return { levels, rounds, runs, histories };
  } finally {
    await tollgate.close();
    await Promise.all(Object.values(workers).map((worker) => worker.stop()));
    await model.close();
  }
}

/** The peer section of `npm run bench`, on its dev server. */
export async function peersSection(context: BenchContext): Promise<SectionResult> {
  const ticks = clockTicks();
  const serverPid = context.server.process.pid;
  if (!serverPid) throw new Error('the dev server has no process id; its CPU time cannot be read');
  const server: PeerServer = {
    name: 'dev server',
    address: context.server.address,
    client: context.client,
    cpuMs: () => processCpuMs(serverPid, ticks),
  };
  const measure = await runPeers(server, {
    folder: path.join(context.folder, 'peers'),
    bundleCode: context.workflowBundle.code,
    levels: peerLevels(),
    rounds: peerRounds(),
  });
  const figures = peerFigures(measure);
  return {
    name: 'peers',
    title: 'Peers, like against like: the same agent turn as Tollgate, @temporalio/ai-sdk and a bare agent loop, streaming and whole',
    markdown: peerMarkdown(measure, figures, {
      serverDb: benchServerDb() === 'memory' ? 'in memory' : 'SQLite file',
      nodes: `every worker on Node ${process.version.slice(1)}`,
    }),
    data: { ...measure, figures },
  };
}

/** One variant at one level: per-round rates, CPU per turn and latency medians. */
interface LevelFigures {
  rates: number[];
  workerCpuMsPerTurn: number[];
  serverCpuMsPerTurn: number[];
  commitsPerTurn?: number[];
  latencyMedians: number[];
  latencies: number[];
  pacedMsPerTurn: number;
}

export type PeerFigures = Record<PeerVariant, { levels: Map<number, LevelFigures>; history?: HistoryFigures }>;

/** Per variant and level, the per-round figures (in round order), and each variant's mean history. */
export function peerFigures(measure: PeerMeasure): PeerFigures {
  const figures = {} as PeerFigures;
  for (const variant of VARIANTS) {
    const levels = new Map<number, LevelFigures>();
    for (const level of measure.levels) {
      const own = measure.runs
        .filter((run) => run.variant === variant && run.concurrency === level.concurrency)
        .sort((left, right) => left.round - right.round);
      if (own.length === 0) continue;
      const turns = own.reduce((sum, run) => sum + run.turns, 0);
      levels.set(level.concurrency, {
        rates: own.map((run) => (run.turns * 1000) / run.wallMs),
        workerCpuMsPerTurn: own.map((run) => run.workerCpuMs / run.turns),
        serverCpuMsPerTurn: own.map((run) => run.serverCpuMs / run.turns),
        ...(own.every((run) => run.commits !== undefined) ? { commitsPerTurn: own.map((run) => run.commits! / run.turns) } : {}),
        latencyMedians: own.map((run) => median(run.latenciesMs)),
        latencies: own.flatMap((run) => run.latenciesMs),
        pacedMsPerTurn: own.reduce((sum, run) => sum + run.pacedMs, 0) / turns,
      });
    }
    const sample = measure.histories[variant] ?? [];
    const mean = (pick: (entry: HistoryFigures) => number) => sample.reduce((sum, entry) => sum + pick(entry), 0) / sample.length;
    figures[variant] = {
      levels,
      history: sample.length
        ? {
            events: mean((entry) => entry.events),
            bytes: mean((entry) => entry.bytes),
            activities: mean((entry) => entry.activities),
            workflowTasks: mean((entry) => entry.workflowTasks),
            signals: mean((entry) => entry.signals),
            parts: sample[0].parts,
          }
        : undefined,
    };
  }
  return figures;
}

/** Per-round ratios of one figure between two variants at one level (rounds paired by number). */
function roundRatios(
  figures: PeerFigures,
  pick: (level: LevelFigures) => number[],
  over: PeerVariant,
  under: PeerVariant,
  concurrency: number,
) {
  const top = figures[over].levels.get(concurrency);
  const bottom = figures[under].levels.get(concurrency);
  if (!top || !bottom) return undefined;
  const values = pick(top).map((value, round) => value / pick(bottom)[round]);
  return spread(values);
}

const fixed = (value: number, digits = 0) => value.toFixed(digits);
const rangeText = (values: number[], digits = 0) => {
  const { median: middle, min, max } = spread(values);
  return `${fixed(middle, digits)} (${fixed(min, digits)}–${fixed(max, digits)})`;
};

/** The peer tables: each variant's figures, the goals per mode with their spreads, and the history breakdown. */
export function peerMarkdown(
  measure: PeerMeasure,
  figures: PeerFigures,
  { serverDb, nodes, serverName = 'Dev server' }: { serverDb: string; nodes: string; serverName?: string },
): string {
  const commitsKnown = VARIANTS.some((variant) => [...figures[variant].levels.values()].some((level) => level.commitsPerTurn));
  const main = table(
    [
      'variant',
      'latency median / p95 ms (at 1 in flight)',
      'of which token pacing ms',
      'turns/s at 1 / 10 / 100 (median of rounds)',
      'worker CPU ms/turn at 1 / 10 / 100',
      'server CPU ms/turn at 1 / 10 / 100',
      ...(commitsKnown ? ['persistence commits/turn at 1 / 10 / 100'] : []),
      'history events / KB per turn',
      'activities / workflow tasks / signals per turn',
    ],
    VARIANTS.map((variant) => {
      const entry = figures[variant];
      const at = (concurrency: number, pick: (level: LevelFigures) => string) => {
        const level = entry.levels.get(concurrency);
        return level ? pick(level) : '–';
      };
      const perLevel = (pick: (level: LevelFigures) => string) => CONCURRENCY.map((concurrency) => at(concurrency, pick)).join(' / ');
      const history = entry.history;
      return [
        LABELS[variant],
        at(1, (level) => `${fixed(median(level.latencies))} / ${fixed(percentile(level.latencies, 0.95))}`),
        at(1, (level) => fixed(level.pacedMsPerTurn, 1)),
        perLevel((level) => fixed(median(level.rates), 1)),
        perLevel((level) => fixed(median(level.workerCpuMsPerTurn))),
        perLevel((level) => fixed(median(level.serverCpuMsPerTurn))),
        ...(commitsKnown ? [perLevel((level) => (level.commitsPerTurn ? fixed(median(level.commitsPerTurn), 1) : '–'))] : []),
        history ? `${fixed(history.events)} / ${(history.bytes / 1024).toFixed(1)}` : '–',
        history ? `${fixed(history.activities)} / ${fixed(history.workflowTasks)} / ${fixed(history.signals)}` : '–',
      ];
    }),
  );
  type Goal = { goal: string; ratio: (mode: Mode) => Spread | undefined; target: number; direction: 'at most' | 'at least' };
  const latency = (level: LevelFigures) => level.latencyMedians;
  const goalsList: Goal[] = [
    {
      goal: 'latency ≤ ×1.0 of @temporalio/ai-sdk (per-round medians at 1 in flight)',
      ratio: (mode) => roundRatios(figures, latency, MODES[mode].tollgate, MODES[mode].ai_sdk, 1),
      target: 1,
      direction: 'at most',
    },
    {
      goal: 'latency ≤ ×1.0 of the bare loop (per-round medians at 1 in flight)',
      ratio: (mode) => roundRatios(figures, latency, MODES[mode].tollgate, MODES[mode].bare_loop, 1),
      target: 1,
      direction: 'at most',
    },
    {
      goal: 'throughput ≥ ×0.95 of the bare loop at 100 in flight',
      ratio: (mode) => roundRatios(figures, (level) => level.rates, MODES[mode].tollgate, MODES[mode].bare_loop, 100),
      target: 0.95,
      direction: 'at least',
    },
    {
      goal: 'worker CPU per turn ≤ ×1.1 of the bare loop at 100 in flight',
      ratio: (mode) => roundRatios(figures, (level) => level.workerCpuMsPerTurn, MODES[mode].tollgate, MODES[mode].bare_loop, 100),
      target: 1.1,
      direction: 'at most',
    },
    {
      goal: 'history bytes per turn ≤ ×1.15 of the bare loop',
      ratio: (mode) => {
        const [own, bare] = [figures[MODES[mode].tollgate].history, figures[MODES[mode].bare_loop].history];
        if (!own || !bare) return undefined;
        const value = own.bytes / bare.bytes;
        return { median: value, min: value, max: value };
      },
      target: 1.15,
      direction: 'at most',
    },
    {
      goal: 'throughput against @temporalio/ai-sdk at 10 in flight (no goal)',
      ratio: (mode) => roundRatios(figures, (level) => level.rates, MODES[mode].tollgate, MODES[mode].ai_sdk, 10),
      target: Number.NaN,
      direction: 'at least',
    },
  ];
  const goals = table(
    ['goal', 'streaming: Tollgate against the same peer streaming', 'whole replies: Tollgate against the same peer whole'],
    goalsList.map(({ goal, ratio, target, direction }) => [
      goal,
      ...(['streaming', 'whole'] as Mode[]).map((mode) => {
        const value = ratio(mode);
        if (!value) return '–';
        return Number.isNaN(target) ? spreadText(value) : `${spreadText(value)} ${judge(value, target, direction)}`;
      }),
    ]),
  );
  const perRound = table(
    ['variant', ...CONCURRENCY.map((concurrency) => `turns/s at ${concurrency}, median (min–max) of rounds`)],
    VARIANTS.map((variant) => [
      LABELS[variant],
      ...CONCURRENCY.map((concurrency) => {
        const level = figures[variant].levels.get(concurrency);
        return level ? rangeText(level.rates, 1) : '–';
      }),
    ]),
  );
  const sizes = measure.levels.map((level) => `${level.turns} at ${level.concurrency}`).join(', ');
  return [
    main,
    '',
    goals,
    '',
    perRound,
    '',
    breakdownTable(figures),
    '',
    `${measure.rounds} rounds per level, the variants interleaved in an order rotated each round; turns per variant and round: ${sizes} in flight ` +
      '(BENCH_PEERS_TURNS, BENCH_PEERS_ROUNDS; at 100 in flight @temporalio/ai-sdk runs only with BENCH_PEERS_FULL=1). ' +
      'A ratio is the median of the per-round ratios (rounds paired by number) with their range; a goal is met when every round meets it, ' +
      'missed when none does, and otherwise inside the noise. Latency and history from the turns at 1 in flight; token pacing: the time the ' +
      'model server spent between streamed tokens per turn (the same server and timing for every variant: each word its own write, no timer). ' +
      `${serverName}: ${serverDb}; ${nodes}. Every turn plays the loopback model server's plan over HTTP (search, read two documents, save a draft, ` +
      'answer: four model steps, four tool calls) with the same handlers. Streaming: Tollgate streams each step to its live view; ' +
      "@temporalio/ai-sdk runs streamText through its streaming activity, which publishes the parts to the workflow's stream in signals " +
      '(every 100 ms); the bare loop reads each streamed reply in its activity.',
  ].join('\n');
}

/** Where each variant's history bytes go: the encoded bytes of one turn's events by kind, largest first. */
function breakdownTable(figures: PeerFigures): string {
  const kinds = new Map<string, number>();
  const parts = (variant: PeerVariant) => figures[variant].history?.parts ?? {};
  for (const variant of VARIANTS) {
    for (const [kind, bytes] of Object.entries(parts(variant))) kinds.set(kind, (kinds.get(kind) ?? 0) + bytes);
  }
  const rows = [...kinds.entries()]
    .sort((left, right) => right[1] - left[1])
    .map(([kind]) => [kind, ...VARIANTS.map((variant) => (parts(variant)[kind] ?? 0).toLocaleString('en-US'))]);
  const totals = ['all events (encoded)', ...VARIANTS.map((variant) => sumValues(parts(variant)).toLocaleString('en-US'))];
  return table(['history bytes of one turn, by event', ...VARIANTS.map((variant) => LABELS[variant])], [...rows, totals]);
}

function sumValues(record: Record<string, number>): number {
  return Object.values(record).reduce((sum, value) => sum + value, 0);
}
