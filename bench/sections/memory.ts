// Item 4: worker memory with 0, 100 and 1,000 turns waiting for approval. The worker runs in its
// own process (bench/memory-worker.ts); its RSS is read after a garbage collection once every
// turn shows as waiting.
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { TollgateClient } from '../../client/tollgate-client';
import { benchConfig, type BenchContext } from '../context';
import { inLanes, sleep, table, type SectionResult } from '../lib';
import type { MemoryReading } from '../memory-worker';

const LEVELS = [0, 100, 1000];
const MB = 1024 * 1024;

export async function memorySection(context: BenchContext): Promise<SectionResult> {
  const taskQueue = 'bench-memory';
  const bundleFile = path.join(context.folder, 'workflow-bundle.js');
  writeFileSync(bundleFile, context.workflowBundle.code);
  const child = fork(
    path.join(__dirname, '..', 'memory-worker.ts'),
    [JSON.stringify({ address: context.server.address, taskQueue, folder: path.join(context.folder, 'memory'), bundleFile })],
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
    const readings: Array<{ waiting: number } & MemoryReading> = [];
    let started = 0;
    for (const level of LEVELS) {
      const ids = Array.from({ length: level - started }, (_, index) => `memory-${started + index}`);
      await inLanes(ids.length, 50, async (index) => {
        await tollgate.startTurn(
          {
            taskId: ids[index],
            prompt: 'bench',
            model: {
              provider: 'scripted',
              script: [{ toolCalls: [{ tool: 'send_note', args: { to: 'requester', text: ids[index] } }] }, { text: 'done' }],
            },
          },
          { workflowId: ids[index] },
        );
      });
      started = level;
      // Every turn must show its pending call (TollgateAwaitingApproval) before the reading.
      const deadline = Date.now() + 300_000;
      for (;;) {
        const { count } = await tollgate.client.workflow.count(`TaskQueue = '${taskQueue}' AND TollgateAwaitingApproval = true`);
        if (count >= level) break;
        if (Date.now() > deadline) throw new Error(`only ${count} of ${level} turns reached their approval wait in 5 minutes`);
        await sleep(500);
      }
      readings.push({ waiting: level, ...(await measure()) });
    }
    const base = readings[0];
    const rows = readings.map((reading) => ({
      ...reading,
      perTurnBytes: reading.waiting > 0 ? (reading.rssBytes - base.rssBytes) / reading.waiting : undefined,
      heapPerTurnBytes: reading.waiting > 0 ? (reading.heapUsedBytes - base.heapUsedBytes) / reading.waiting : undefined,
    }));
    const markdown = table(
      ['turns waiting', 'worker RSS MB', 'heap used MB', 'workflows cached', 'RSS per waiting turn KB', 'heap per waiting turn KB'],
      rows.map((row) => [
        row.waiting,
        (row.rssBytes / MB).toFixed(1),
        (row.heapUsedBytes / MB).toFixed(1),
        row.cachedWorkflows,
        row.perTurnBytes === undefined ? '–' : (row.perTurnBytes / 1024).toFixed(0),
        row.heapPerTurnBytes === undefined ? '–' : (row.heapPerTurnBytes / 1024).toFixed(0),
      ]),
    );
    return {
      name: 'memory',
      title: 'Worker memory with turns waiting for approval',
      markdown: `${markdown}\n\nOne worker process (default cache size, reused V8 context), read after a garbage collection once every turn's state query shows its pending call. Target: ≤ 1 MB of RSS per waiting turn.`,
      data: { rows },
    };
  } finally {
    await tollgate.close();
    child.disconnect();
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
  }
}
