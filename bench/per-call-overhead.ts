// `npm run bench`: what a read tool call through Tollgate's boundary costs over the same handler as a
// bare Temporal activity, on the dev server; the two variants are interleaved round by round so that
// a noisy machine moves both alike. Prints a markdown table and writes bench/results/per-call-overhead.json.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createActivities } from '../activities';
import { defineTool } from '../activities/define-tool';
import { ToolOutcome } from '../activities/tool-outcome';
import { TollgateClient } from '../client/tollgate-client';
import type { AgentTurnResult } from '../common/types';
import { parseConfig, PROJECT_ROOT } from '../config/load-config';
import { freePort, startDevServer } from '../server/dev-server';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CALLS_PER_ROUND = 20;

/** The handler both variants run: a small in-memory lookup. */
function lookup(query: string): string {
  return `result for ${query}`;
}

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-'));
  const server = await startDevServer({ address: `127.0.0.1:${await freePort()}`, namespace: 'default', dbFile: path.join(folder, 'temporal.db'), logFile: path.join(folder, 'server.log') });
  try {
    const config = parseConfig(
      { temporal: { address: server.address, taskQueue: 'bench' }, workspace: path.join(folder, 'workspace'), store: { sqliteFile: path.join(folder, 'intents.db') }, corpus: path.join(PROJECT_ROOT, 'examples', 'corpus') },
      { source: 'bench', baseDir: PROJECT_ROOT, env: {} },
    );
    const tool = defineTool({
      name: 'lookup',
      description: 'A small lookup.',
      input: z.strictObject({ query: z.string().describe('What to look up.') }),
      effect: 'read',
      handler: ({ query }) => ToolOutcome.ok(lookup(query)),
    });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await Worker.create({
      connection,
      taskQueue: 'bench',
      workflowBundle: await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'bench-workflows.ts'), logger: new DefaultLogger('WARN') }),
      activities: { ...createActivities({ config, tools: [tool] }), bareLookup: async (query: string) => lookup(query) },
    });
    const tollgate = await TollgateClient.connect(config);
    const bare = new Client({ connection: await Connection.connect({ address: server.address }) });
    const script = [{ toolCalls: Array.from({ length: 1 }, () => ({ tool: 'lookup', args: { query: 'q' } })) }];
    const samples = { tollgate: [] as number[], bare: [] as number[] };
    await worker.runUntil(async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const turn = await tollgate.startTurn({
          taskId: `bench-${round}`,
          prompt: 'bench',
          model: { provider: 'scripted', script: [...Array.from({ length: CALLS_PER_ROUND }, () => script[0]), { text: 'done' }] },
          limits: { maxSteps: CALLS_PER_ROUND + 1, maxToolCalls: CALLS_PER_ROUND },
        });
        const result: AgentTurnResult = await tollgate.result(turn.workflowId);
        samples.tollgate.push(...result.toolCalls.map((event) => event.durationMs));
        samples.bare.push(...(await bare.workflow.execute('bareReads', { taskQueue: 'bench', workflowId: `bare-${round}-${Date.now()}`, args: [CALLS_PER_ROUND] })) as number[]);
      }
    });
    await tollgate.close();
    await bare.connection.close();
    await connection.close();

    const rows = (['bare', 'tollgate'] as const).map((variant) => ({ variant, calls: samples[variant].length, median: percentile(samples[variant], 0.5), p95: percentile(samples[variant], 0.95) }));
    const ratio = { median: rows[1].median / Math.max(rows[0].median, 1), p95: rows[1].p95 / Math.max(rows[0].p95, 1) };
    console.log('| variant | calls | median ms | p95 ms |\n|---|---|---|---|');
    for (const row of rows) console.log(`| ${row.variant} | ${row.calls} | ${row.median} | ${row.p95} |`);
    console.log(`\nread overhead: median ×${ratio.median.toFixed(2)}, p95 ×${ratio.p95.toFixed(2)} (target ≤ ×1.10)`);
    const results = path.join(PROJECT_ROOT, 'bench', 'results');
    mkdirSync(results, { recursive: true });
    writeFileSync(path.join(results, 'per-call-overhead.json'), `${JSON.stringify({ rounds: ROUNDS, callsPerRound: CALLS_PER_ROUND, rows, ratio }, null, 2)}\n`);
  } finally {
    await server.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
