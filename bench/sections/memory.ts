// Worker memory with 0, 1,000 and 10,000 turns waiting for approval, measured at each level (never
// scaled), on the worker's default workflow cache (temporal.worker.maxCachedWorkflows): the waiting
// turns, least recently used, leave it. The worker runs in its own process (bench/memory-worker.ts);
// its RSS is read after a garbage collection once every turn shows as waiting (visibility, so no
// query brings a turn back). Then the latency from an approval to its call's start, for turns still
// cached (started last) and for turns evicted long ago (started first), from the turns' histories.
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { TollgateClient } from '../../client/tollgate-client';
import type { PendingApproval } from '../../common/contract/decisions';
import { approvalSignal } from '../../workflows/messages';
import { benchConfig, type BenchContext } from '../context';
import { tsToMs } from '@temporalio/common/lib/time';
import { cacheSizeFromEnv, inLanes, median, sleep, table, type SectionResult } from '../lib';
import type { MemoryReading } from '../memory-worker';

/** Turns waiting at each reading (BENCH_MEMORY_WAITING="1000,10000"; 0 is always read first). */
function waitingLevels(): number[] {
  const raw = process.env.BENCH_MEMORY_WAITING ?? '1000,10000';
  const values = raw.split(',').map((part) => Number(part.trim()));
  if (
    values.some((value) => !Number.isInteger(value) || value < 1) ||
    values.some((value, index) => index > 0 && value <= values[index - 1])
  )
    throw new Error(`BENCH_MEMORY_WAITING must be increasing whole numbers ≥ 1, got "${raw}"`);
  return [0, ...values];
}
/** Turns started and not yet waiting, at most, while the waiting ones are started. */
const IN_FLIGHT = 100;
/** Approvals timed for each of the cached and the evicted turns. */
const APPROVALS = 5;
const MB = 1024 * 1024;

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('the memory section: a turn did not show its pending approval within a minute');
    await sleep(100);
  }
}

export async function memorySection(context: BenchContext): Promise<SectionResult> {
  const taskQueue = 'bench-memory';
  const cacheSize =
    cacheSizeFromEnv('BENCH_MEMORY_CACHE') ??
    benchConfig(context.folder, context.server.address, taskQueue).temporal.worker.maxCachedWorkflows;
  const bundleFile = path.join(context.folder, 'workflow-bundle.js');
  writeFileSync(bundleFile, context.workflowBundle.code);
  const child = fork(
    path.join(__dirname, '..', 'memory-worker.ts'),
    [
      JSON.stringify({
        address: context.server.address,
        taskQueue,
        folder: path.join(context.folder, 'memory'),
        bundleFile,
        maxCachedWorkflows: cacheSize,
      }),
    ],
    {
      execArgv: ['--expose-gc', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const messages: unknown[] = [];
  const waiters: Array<(message: unknown) => void> = [];
  child.on('message', (message) => {
    const waiter = waiters.shift();
    if (waiter) waiter(message);
    else messages.push(message);
  });
  const next = (timeoutMs = 60_000) =>
    new Promise<unknown>((resolve, reject) => {
      if (messages.length > 0) return resolve(messages.shift());
      const timer = setTimeout(() => reject(new Error('the memory worker did not answer')), timeoutMs);
      waiters.push((message) => {
        clearTimeout(timer);
        resolve(message);
      });
    });
  const tollgate = await TollgateClient.connect(benchConfig(context.folder, context.server.address, taskQueue));
  try {
    if ((await next(120_000)) !== 'ready') throw new Error('the memory worker did not start');
    // One turn first, so the workflow code and the store are loaded before the baseline.
    const warm = await tollgate.startTurn(
      { taskId: 'memory-warm', prompt: 'bench', model: { provider: 'scripted', script: [{ text: 'done' }] } },
      { workflowId: 'memory-warm' },
    );
    await tollgate.result(warm.workflowId);
    const measure = async (): Promise<MemoryReading> => {
      await sleep(1_000);
      child.send('measure');
      return (await next()) as MemoryReading;
    };
    const startWaiting = (id: string) =>
      tollgate.startTurn(
        {
          taskId: id,
          prompt: 'bench',
          model: {
            provider: 'scripted',
            script: [{ toolCalls: [{ tool: 'send_note', args: { to: 'requester', text: id } }] }, { text: 'done' }],
          },
        },
        { workflowId: id },
      );
    const waitingCount = async () =>
      (await tollgate.client.workflow.count(`TaskQueue = '${taskQueue}' AND TollgateAwaitingApproval = true`)).count;
    const untilWaiting = async (wanted: number) => {
      // Every turn must show its pending call (TollgateAwaitingApproval) before the reading.
      const deadline = Date.now() + 900_000;
      for (;;) {
        const count = await waitingCount();
        if (count >= wanted) return;
        if (Date.now() > deadline) throw new Error(`only ${count} of ${wanted} turns reached their approval wait in 15 minutes`);
        await sleep(500);
      }
    };
    const pendingOf = (id: string) => until(async () => (await tollgate.state(id)).pendingApprovals[0]);
    const evictedPending = new Map<string, PendingApproval>();
    const readings: Array<{ waiting: number; startSeconds: number } & MemoryReading> = [];
    let started = 0;
    for (const level of waitingLevels()) {
      const ids = Array.from({ length: level - started }, (_, index) => `memory-${started + index}`);
      const startedAt = performance.now();
      // Turns arrive as they would: at most IN_FLIGHT not yet waiting at once (started, minus those the
      // visibility count shows waiting), so the turns still running stay in the cache and the waiting ones leave it.
      let next = 0;
      while (next < ids.length) {
        const running = started + next - (await waitingCount());
        const room = Math.min(IN_FLIGHT - running, ids.length - next);
        if (room <= 0) {
          await sleep(100);
          continue;
        }
        await inLanes(room, 50, (index) => startWaiting(ids[next + index]).then(() => undefined));
        next += room;
      }
      started = level;
      await untilWaiting(level);
      // The first turns' pending calls, read now: the turns started after push them out of the cache.
      if (evictedPending.size === 0 && level >= APPROVALS) {
        for (let index = 0; index < APPROVALS; index++) evictedPending.set(`memory-${index}`, await pendingOf(`memory-${index}`));
      }
      readings.push({ waiting: level, startSeconds: (performance.now() - startedAt) / 1000, ...(await measure()) });
    }

    // Approval to the call's start: for turns the cache still holds (started just now) and for
    // turns started first, long evicted. Their pending calls are read when they start waiting (a
    // query would bring an evicted turn back); the approval goes as the signal any client can send,
    // and the time runs from sending it to the call's start event in the turn's history.
    const approvalLatency = async (id: string, pending: PendingApproval): Promise<number> => {
      const handle = tollgate.client.workflow.getHandle(id);
      const sent = Date.now();
      await handle.signal(approvalSignal, {
        callId: pending.callId,
        decision: 'approve',
        approver: 'bench',
        argsDigest: pending.argsDigest,
      });
      await tollgate.result(id);
      const events = (await handle.fetchHistory()).events ?? [];
      const signaled = events.find((event) => event.workflowExecutionSignaledEventAttributes);
      const callStarted = events.find(
        (event) => event.activityTaskStartedEventAttributes && signaled && Number(event.eventId) > Number(signaled.eventId),
      );
      if (!signaled || !callStarted) throw new Error(`turn ${id}: no approval signal or no call started after it in its history`);
      return tsToMs(callStarted.eventTime!) - sent;
    };
    const evicted: number[] = [];
    for (const [id, pending] of evictedPending) evicted.push(await approvalLatency(id, pending));
    const cached: number[] = [];
    for (let index = 0; index < APPROVALS; index++) {
      const id = `memory-cached-${index}`;
      await startWaiting(id);
      cached.push(await approvalLatency(id, await pendingOf(id)));
    }
    const last = readings.at(-1)!;
    const cachedAtEnd = last.cachedWorkflows;

    const base = readings[0];
    const rows = readings.map((reading) => ({
      ...reading,
      perTurnBytes: reading.waiting > 0 ? (reading.rssBytes - base.rssBytes) / reading.waiting : undefined,
      heapPerTurnBytes: reading.waiting > 0 ? (reading.heapUsedBytes - base.heapUsedBytes) / reading.waiting : undefined,
    }));
    const markdown = table(
      [
        'turns waiting',
        'started in s',
        'worker RSS MB',
        'heap used MB',
        'workflows cached',
        'RSS per waiting turn KB',
        'heap per waiting turn KB',
      ],
      rows.map((row) => [
        row.waiting.toLocaleString('en-US'),
        row.waiting > 0 ? row.startSeconds.toFixed(0) : '–',
        (row.rssBytes / MB).toFixed(1),
        (row.heapUsedBytes / MB).toFixed(1),
        row.cachedWorkflows,
        row.perTurnBytes === undefined ? '–' : (row.perTurnBytes / 1024).toFixed(1),
        row.heapPerTurnBytes === undefined ? '–' : (row.heapPerTurnBytes / 1024).toFixed(1),
      ]),
    );
    const latency = table(
      ['turn approved', 'approval to the call start, median ms', 'min–max ms', 'approvals'],
      [
        [
          'cached (started last)',
          median(cached).toFixed(0),
          `${Math.min(...cached).toFixed(0)}–${Math.max(...cached).toFixed(0)}`,
          APPROVALS,
        ],
        [
          'evicted (started first, replayed from its history)',
          median(evicted).toFixed(0),
          `${Math.min(...evicted).toFixed(0)}–${Math.max(...evicted).toFixed(0)}`,
          APPROVALS,
        ],
      ],
    );
    const ratioText = `×${(median(evicted) / median(cached)).toFixed(2)}`;
    return {
      name: 'memory',
      title: 'Worker memory with turns waiting for approval, and an approval cached against evicted',
      markdown:
        `${markdown}\n\n${latency}\n\n` +
        `One worker process, its workflow cache temporal.worker.maxCachedWorkflows: ${cacheSize} (BENCH_MEMORY_CACHE; ${cachedAtEnd} cached at the last reading), ` +
        'read after a garbage collection once the visibility count shows every turn waiting (BENCH_MEMORY_WAITING); ' +
        `turns started with at most ${IN_FLIGHT} not yet waiting at once. ` +
        `Goals: RSS per waiting turn ≤ 50 KB at the largest level; an evicted turn's approval within ×2 of a cached one's (${ratioText}) and under 1 s. ` +
        "Approval latency: from the approval signal event to the call activity's start event, in the turn's history.",
      data: { rows, approvalLatencyMs: { cached, evicted }, cacheSize },
    };
  } finally {
    await tollgate.close();
    child.disconnect();
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
  }
}
