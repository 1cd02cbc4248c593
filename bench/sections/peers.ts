// The same agent turn (search, read two documents, save a draft, answer) as Tollgate, as
// Temporal's own AI SDK integration (@temporalio/ai-sdk on AI SDK 7, bench/peer-worker.ts) and as
// the bare agent loop, against one dev server and one loopback model server that every variant
// calls over HTTP. Each variant's worker runs in its own process (the project's Node.js and
// packages), so its CPU time and memory are its own; the dev server's CPU time comes from /proc.
// Rounds alternate the variants.
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { startLoopbackModelServer } from '../../client/demo/loopback-model-server';
import { TollgateClient } from '../../client/tollgate-client';
import type { AgentTurnResult } from '../../common/contract/turn';
import { PROJECT_ROOT } from '../../config/load-config';
import type { BenchContext } from '../context';
import { inLanes, median, percentile, sleep, table, type SectionResult } from '../lib';
import { PLAN_CORPUS, PLAN_MODEL, PLAN_MODEL_WHOLE, planConfig } from '../plan-config';
import type { VariantReading } from '../variant-worker';

export type PeerVariant = 'tollgate' | 'tollgate_whole' | 'ai_sdk' | 'bare_loop';
const VARIANTS: PeerVariant[] = ['tollgate', 'tollgate_whole', 'ai_sdk', 'bare_loop'];
/** The two Tollgate variants: its default (the model step streams) and `stream: false` (the whole reply at once, as the peers ask). */
const TOLLGATE_VARIANTS = ['tollgate', 'tollgate_whole'] as const;
const isTollgate = (variant: PeerVariant): variant is (typeof TOLLGATE_VARIANTS)[number] =>
  variant === 'tollgate' || variant === 'tollgate_whole';
const LABELS: Record<PeerVariant, string> = {
  tollgate: 'Tollgate (streaming, the default)',
  tollgate_whole: 'Tollgate (model stream: false)',
  ai_sdk: '@temporalio/ai-sdk 1.23 (AI SDK 7)',
  bare_loop: 'bare agent loop',
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

/** Turns per run at 1, 10 and 100 in flight (BENCH_PEERS_TURNS="10,60,200"). */
function turnsPerLevel(): number[] {
  const raw = process.env.BENCH_PEERS_TURNS ?? '10,60,200';
  const values = raw.split(',').map((part) => Number(part.trim()));
  if (values.length !== CONCURRENCY.length || values.some((value) => !Number.isInteger(value) || value < 1)) {
    throw new Error(`BENCH_PEERS_TURNS must be three whole numbers ≥ 1 (turns at 1, 10 and 100 in flight), got "${raw}"`);
  }
  return values;
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
function processCpuMs(pid: number, ticksPerSecond: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14-17 of stat (utime, stime, cutime, cstime); the slice starts at field 3.
  const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
  return (ticks * 1000) / ticksPerSecond;
}

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** One variant's worker process and the IPC questions it answers. */
class WorkerProcess {
  private readonly replies: Array<(reading: VariantReading) => void> = [];
  private readonly exited: Promise<void>;
  private readonly ready: Promise<void>;

  constructor(
    readonly variant: PeerVariant,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    this.ready = new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the ${LABELS[variant]} worker exited (code ${code}) before it was ready`)));
      child.on('message', (message) => {
        if (message === 'ready') return resolve();
        this.replies.shift()?.(message as VariantReading);
      });
    });
  }

  async started(timeoutMs = 180_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the ${LABELS[this.variant]} worker was not ready in ${timeoutMs / 1000} s`)), timeoutMs);
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
      const timer = setTimeout(() => reject(new Error(`the ${LABELS[this.variant]} worker did not answer "${question}"`)), 60_000);
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

interface Run {
  turns: number;
  wallMs: number;
  workerCpuMs: number;
  serverCpuMs: number;
  latenciesMs: number[];
}

interface HistoryFigures {
  events: number;
  bytes: number;
  activities: number;
  workflowTasks: number;
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

/** The peer section: latency, throughput, CPU, history and memory per turn for the three variants, and the goals' ratios. */
export async function peersSection(context: BenchContext): Promise<SectionResult> {
  const levels = turnsPerLevel();
  const rounds = envNumber('BENCH_PEERS_ROUNDS', 2);
  const waitingTurns = envNumber('BENCH_PEERS_WAITING', 150);
  const ticks = clockTicks();
  const serverPid = context.server.process.pid;
  if (!serverPid) throw new Error('the dev server has no process id; its CPU time cannot be read');
  const model = await startLoopbackModelServer({ delayMs: 0 });
  const folder = path.join(context.folder, 'peers');
  const bundleFile = path.join(context.folder, 'peers-workflow-bundle.js');
  writeFileSync(bundleFile, context.workflowBundle.code);
  // Both Tollgate variants run on one worker: they differ only in the model entry their turns name.
  const queues: Record<PeerVariant, string> = {
    tollgate: 'peers-tollgate',
    tollgate_whole: 'peers-tollgate',
    ai_sdk: 'peers-ai-sdk',
    bare_loop: 'peers-bare',
  };
  // Every worker runs on this Node.js, with tsx and the packages of the project's node_modules.
  const spawnWorker = (script: string, settings: object) =>
    fork(path.join(__dirname, '..', script), [JSON.stringify(settings)], {
      cwd: PROJECT_ROOT,
      execArgv: ['--expose-gc', '--import', 'tsx', ...profileFlags()],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
  const spawnRoot = (variant: 'tollgate' | 'bare') =>
    spawnWorker('variant-worker.ts', {
      variant,
      address: context.server.address,
      taskQueue: queues[variant === 'bare' ? 'bare_loop' : 'tollgate'],
      folder: path.join(folder, variant),
      baseURL: model.baseURL,
      bundleFile,
    });
  const tollgateWorker = new WorkerProcess('tollgate', spawnRoot('tollgate'));
  const workers: Record<PeerVariant, WorkerProcess> = {
    tollgate: tollgateWorker,
    tollgate_whole: tollgateWorker,
    bare_loop: new WorkerProcess('bare_loop', spawnRoot('bare')),
    ai_sdk: new WorkerProcess(
      'ai_sdk',
      spawnWorker('peer-worker.ts', {
        address: context.server.address,
        taskQueue: queues.ai_sdk,
        baseURL: model.baseURL,
        corpus: PLAN_CORPUS,
        workspace: path.join(folder, 'ai-sdk', 'workspace'),
      }),
    ),
  };
  const tollgate = await TollgateClient.connect(
    planConfig({
      folder: path.join(folder, 'tollgate'),
      address: context.server.address,
      taskQueue: queues.tollgate,
      baseURL: model.baseURL,
    }),
  );
  try {
    await Promise.all(VARIANTS.map((variant) => workers[variant].started()));
    const client = context.client;

    const checkAnswer = (variant: PeerVariant, id: string, answer: string | undefined, toolCalls: number) => {
      if (toolCalls !== 4 || !answer?.includes('The brief is saved as'))
        throw new Error(
          `peer turn ${id} (${LABELS[variant]}) made ${toolCalls} tool calls and answered ${JSON.stringify(answer?.slice(0, 200))}`,
        );
    };
    const startTurn = async (variant: PeerVariant, id: string, waiting: boolean) => {
      if (isTollgate(variant)) {
        const tools = waiting ? [...PLAN_TOOLS, 'send_message'] : PLAN_TOOLS;
        const model = variant === 'tollgate' ? PLAN_MODEL : PLAN_MODEL_WHOLE;
        await tollgate.startTurn({ taskId: id, prompt: PROMPT, model, tools }, { workflowId: id });
        return;
      }
      const [type, input] =
        variant === 'ai_sdk'
          ? ['peerAgentTurn', { taskId: id, prompt: PROMPT, model: 'scripted', waitBeforeWrite: waiting }]
          : ['bareAgentPlan', { taskId: id, prompt: PROMPT, waitBeforeWrite: waiting }];
      await client.workflow.start(type, { taskQueue: queues[variant], workflowId: id, args: [input] });
    };
    const runTurn = async (variant: PeerVariant, id: string): Promise<number> => {
      const started = performance.now();
      await startTurn(variant, id, false);
      if (isTollgate(variant)) {
        const result: AgentTurnResult = await tollgate.result(id);
        if (result.status !== 'completed' || result.toolCalls.some((event) => event.status !== 'success'))
          throw new Error(`peer turn ${id} (Tollgate) ended ${result.status}`);
        checkAnswer(variant, id, result.answer, result.toolCalls.length);
      } else {
        const result = await client.workflow.getHandle(id).result();
        checkAnswer(variant, id, result.answer, result.toolCalls);
      }
      return performance.now() - started;
    };
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
        parts: historyParts(events),
      };
    };

    // Warm-up: every worker loads its workflow code, providers and store before anything counts.
    for (const variant of VARIANTS) for (let index = 0; index < 2; index++) await runTurn(variant, `peers-warm-${variant}-${index}`);
    const profiles = process.env.BENCH_PEERS_CPU_PROF;
    if (profiles) {
      const marks = await Promise.all(
        (['tollgate', 'ai_sdk', 'bare_loop'] as const).map(async (variant) => [
          workers[variant].pid,
          {
            variant: variant === 'tollgate' ? 'Tollgate (both variants)' : LABELS[variant],
            monotonicUs: (await workers[variant].ask('mark')).monotonicUs,
          },
        ]),
      );
      writeFileSync(path.join(path.resolve(profiles), 'marks.json'), JSON.stringify(Object.fromEntries(marks), null, 2));
    }

    const runs: Record<PeerVariant, Run[][]> = { tollgate: [], tollgate_whole: [], ai_sdk: [], bare_loop: [] };
    const sampleIds: Record<PeerVariant, string[]> = { tollgate: [], tollgate_whole: [], ai_sdk: [], bare_loop: [] };
    for (const [levelIndex, concurrency] of CONCURRENCY.entries()) {
      for (const variant of VARIANTS) runs[variant][levelIndex] = [];
      const turns = Math.max(1, Math.round(levels[levelIndex] / rounds));
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
        for (const variant of order) {
          const latenciesMs: number[] = [];
          const workerBefore = await workers[variant].ask('cpu');
          const serverBefore = processCpuMs(serverPid, ticks);
          const wallMs = await inLanes(turns, concurrency, async (index) => {
            const id = `peers-${variant}-${concurrency}-${round}-${index}`;
            latenciesMs.push(await runTurn(variant, id));
            if (concurrency === 1) sampleIds[variant].push(id);
          });
          const serverCpuMs = processCpuMs(serverPid, ticks) - serverBefore;
          const workerCpuMs = (await workers[variant].ask('cpu')).cpuMs - workerBefore.cpuMs;
          runs[variant][levelIndex].push({ turns, wallMs, workerCpuMs, serverCpuMs, latenciesMs });
        }
      }
    }

    // Memory: a baseline after a garbage collection, then `waitingTurns` turns each waiting before a write.
    const memory: Record<PeerVariant, { baseRss: number; rss: number; perThousandBytes: number; cached?: number }> = {} as never;
    // A turn waiting for an approval does not depend on how its model steps streamed: the two Tollgate variants share one worker and one measure.
    for (const variant of VARIANTS.filter((each) => each !== 'tollgate_whole')) {
      const base = await workers[variant].ask('measure');
      const ids = Array.from({ length: waitingTurns }, (_, index) => `peers-waiting-${variant}-${index}`);
      await inLanes(ids.length, 20, (index) => startTurn(variant, ids[index], true));
      const deadline = Date.now() + 300_000;
      for (;;) {
        const count = isTollgate(variant)
          ? (await client.workflow.count(`TaskQueue = '${queues.tollgate}' AND TollgateAwaitingApproval = true`)).count
          : (
              await Promise.all(
                ids.map((id) =>
                  // A turn whose first workflow task has not finished yet cannot answer; it is not waiting yet.
                  client.workflow
                    .getHandle(id)
                    .query<boolean>(variant === 'ai_sdk' ? 'peerWaiting' : 'bareWaitingWrite')
                    .catch(() => false),
                ),
              )
            ).filter(Boolean).length;
        if (count >= waitingTurns) break;
        if (Date.now() > deadline)
          throw new Error(`only ${count} of ${waitingTurns} ${LABELS[variant]} turns reached their wait in 5 minutes`);
        await sleep(500);
      }
      await sleep(1_000);
      const loaded = await workers[variant].ask('measure');
      memory[variant] = {
        baseRss: base.rssBytes!,
        rss: loaded.rssBytes!,
        perThousandBytes: ((loaded.rssBytes! - base.rssBytes!) / waitingTurns) * 1000,
        cached: loaded.cachedWorkflows,
      };
      await inLanes(ids.length, 20, async (index) => {
        await client.workflow.getHandle(ids[index]).terminate('peer benchmark: memory measured');
      });
    }

    const histories = Object.fromEntries(
      await Promise.all(VARIANTS.map(async (variant) => [variant, await Promise.all(sampleIds[variant].map(history))] as const)),
    ) as Record<PeerVariant, HistoryFigures[]>;
    const figures = Object.fromEntries(
      VARIANTS.map((variant) => {
        const perLevel = runs[variant].map((levelRuns) => {
          const turns = levelRuns.reduce((sum, run) => sum + run.turns, 0);
          return {
            rate: median(levelRuns.map((run) => (run.turns * 1000) / run.wallMs)),
            workerCpuMsPerTurn: levelRuns.reduce((sum, run) => sum + run.workerCpuMs, 0) / turns,
            serverCpuMsPerTurn: levelRuns.reduce((sum, run) => sum + run.serverCpuMs, 0) / turns,
          };
        });
        const latencies = runs[variant][0].flatMap((run) => run.latenciesMs);
        const sample = histories[variant];
        const mean = (pick: (figures: HistoryFigures) => number) => sample.reduce((sum, entry) => sum + pick(entry), 0) / sample.length;
        return [
          variant,
          {
            latencyMedianMs: median(latencies),
            latencyP95Ms: percentile(latencies, 0.95),
            perLevel,
            historyEvents: mean((entry) => entry.events),
            historyBytes: mean((entry) => entry.bytes),
            activities: mean((entry) => entry.activities),
            workflowTasks: mean((entry) => entry.workflowTasks),
            historyParts: sample[0]?.parts ?? {},
            memory: memory[variant === 'tollgate_whole' ? 'tollgate' : variant],
          },
        ];
      }),
    ) as Record<PeerVariant, PeerFigures>;
    return {
      name: 'peers',
      title: 'Peers: the same agent turn as Tollgate, @temporalio/ai-sdk and a bare agent loop',
      markdown: peerMarkdown(figures, {
        levels,
        rounds,
        waitingTurns,
        serverDb: process.env.BENCH_SERVER_DB === 'memory' ? 'in memory' : 'SQLite file',
        nodes: `every worker on Node ${process.version.slice(1)}`,
      }),
      data: { levels, rounds, waitingTurns, concurrency: CONCURRENCY, figures, runs },
    };
  } finally {
    await tollgate.close();
    await Promise.all([...new Set(VARIANTS.map((variant) => workers[variant]))].map((worker) => worker.stop()));
    await model.close();
  }
}

interface PeerFigures {
  latencyMedianMs: number;
  latencyP95Ms: number;
  perLevel: Array<{ rate: number; workerCpuMsPerTurn: number; serverCpuMsPerTurn: number }>;
  historyEvents: number;
  historyBytes: number;
  activities: number;
  workflowTasks: number;
  historyParts: Record<string, number>;
  memory: { baseRss: number; rss: number; perThousandBytes: number; cached?: number };
}

/** Where each variant's history bytes go: the encoded bytes of one turn's events by kind, largest first. */
function breakdownTable(figures: Record<PeerVariant, PeerFigures>): string {
  const kinds = new Map<string, number>();
  for (const variant of VARIANTS) {
    for (const [kind, bytes] of Object.entries(figures[variant].historyParts)) kinds.set(kind, (kinds.get(kind) ?? 0) + bytes);
  }
  const rows = [...kinds.entries()]
    .sort((left, right) => right[1] - left[1])
    .map(([kind]) => [kind, ...VARIANTS.map((variant) => (figures[variant].historyParts[kind] ?? 0).toLocaleString('en-US'))]);
  const totals = ['all events (encoded)', ...VARIANTS.map((variant) => sumValues(figures[variant].historyParts).toLocaleString('en-US'))];
  return table(['history bytes of one turn, by event', ...VARIANTS.map((variant) => LABELS[variant])], [...rows, totals]);
}

function sumValues(record: Record<string, number>): number {
  return Object.values(record).reduce((sum, value) => sum + value, 0);
}

function verdict(ok: boolean): string {
  return ok ? 'met' : 'missed';
}

function peerMarkdown(
  figures: Record<PeerVariant, PeerFigures>,
  {
    levels,
    rounds,
    waitingTurns,
    serverDb,
    nodes,
  }: { levels: number[]; rounds: number; waitingTurns: number; serverDb: string; nodes: string },
): string {
  const MB = 1024 * 1024;
  const main = table(
    [
      'variant',
      'latency median / p95 ms',
      'turns/s at 1 / 10 / 100',
      'worker CPU ms/turn (1 / 100 in flight)',
      'server CPU ms/turn (1 / 100 in flight)',
      'history events / KB per turn',
      'activities / workflow tasks per turn',
      'worker RSS MB per 1,000 waiting',
    ],
    VARIANTS.map((variant) => {
      const entry = figures[variant];
      const [one, , hundred] = entry.perLevel;
      return [
        LABELS[variant],
        `${entry.latencyMedianMs.toFixed(0)} / ${entry.latencyP95Ms.toFixed(0)}`,
        entry.perLevel.map((level) => level.rate.toFixed(1)).join(' / '),
        `${one.workerCpuMsPerTurn.toFixed(0)} / ${hundred.workerCpuMsPerTurn.toFixed(0)}`,
        `${one.serverCpuMsPerTurn.toFixed(0)} / ${hundred.serverCpuMsPerTurn.toFixed(0)}`,
        `${entry.historyEvents.toFixed(0)} / ${(entry.historyBytes / 1024).toFixed(1)}`,
        `${entry.activities.toFixed(0)} / ${entry.workflowTasks.toFixed(0)}`,
        (entry.memory.perThousandBytes / MB).toFixed(0),
      ];
    }),
  );
  const { ai_sdk: peer, bare_loop: bare } = figures;
  const rows: Array<{ goal: string; measure: (tollgate: PeerFigures) => [number, boolean] }> = [
    {
      goal: 'latency ≤ ×1.0 of @temporalio/ai-sdk (median)',
      measure: (tollgate) => [tollgate.latencyMedianMs / peer.latencyMedianMs, tollgate.latencyMedianMs <= peer.latencyMedianMs],
    },
    ...CONCURRENCY.map((concurrency, index) => ({
      goal: `throughput ≥ ×1.0 of @temporalio/ai-sdk at ${concurrency} in flight`,
      measure: (tollgate: PeerFigures): [number, boolean] => [
        tollgate.perLevel[index].rate / peer.perLevel[index].rate,
        tollgate.perLevel[index].rate >= peer.perLevel[index].rate,
      ],
    })),
    {
      goal: 'throughput ≥ ×0.9 of the bare loop at 100 in flight',
      measure: (tollgate) => [tollgate.perLevel[2].rate / bare.perLevel[2].rate, tollgate.perLevel[2].rate >= 0.9 * bare.perLevel[2].rate],
    },
    {
      goal: 'history bytes ≤ ×1.2 of the bare loop',
      measure: (tollgate) => [tollgate.historyBytes / bare.historyBytes, tollgate.historyBytes <= 1.2 * bare.historyBytes],
    },
  ];
  const goals = table(
    ['goal', ...TOLLGATE_VARIANTS.map((variant) => LABELS[variant])],
    rows.map(({ goal, measure }) => [
      goal,
      ...TOLLGATE_VARIANTS.map((variant) => {
        const [value, met] = measure(figures[variant]);
        return `×${value.toFixed(2)} ${verdict(met)}`;
      }),
    ]),
  );
  return [
    main,
    '',
    goals,
    '',
    breakdownTable(figures),
    '',
    `Turns at 1 / 10 / 100 in flight: ${levels.join(' / ')} per variant, in ${rounds} alternating rounds (BENCH_PEERS_TURNS, BENCH_PEERS_ROUNDS), ` +
      `so at most ${CONCURRENCY.map((concurrency, index) => Math.min(concurrency, Math.max(1, Math.round(levels[index] / rounds)))).join(' / ')} in flight; ` +
      `latency and history from the turns at 1 in flight; memory with ${waitingTurns} turns waiting (BENCH_PEERS_WAITING), scaled to 1,000. ` +
      `Dev server: ${serverDb}; ${nodes}. Every turn plays the loopback model server's plan over HTTP (search, read two documents, save a draft, answer: ` +
      'four model steps, four tool calls) with the same handlers. Waiting: Tollgate on the approval of an irreversible send after its draft; ' +
      '@temporalio/ai-sdk and the bare loop on a signal before their write.',
  ].join('\n');
}
