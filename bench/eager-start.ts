// Eager workflow start, measured on its own: the same scripted turn (the peer plan: four model
// steps, three reads and a reversible write) started from the worker's own process on its
// NativeConnection, with and without `eagerStart`, in alternating rounds at 1 in flight.
// Usage: npx tsx bench/eager-start.ts [rounds, default 5] [turns per round, default 10]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { TollgateClient } from '../client/tollgate-client';
import { freePort } from '../connection/ports';
import { startDevServer } from '../server/dev-server';
import { createWorker } from '../worker/create-worker';
import { benchConfig, quietRuntime } from './context';
import { median, table } from './lib';
import { planScript } from './sections/scale';

function whole(raw: string | undefined, fallback: number, name: string): number {
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number ≥ 1, got "${raw}"`);
  return value;
}

async function main(): Promise<void> {
  const rounds = whole(process.argv[2], 5, 'rounds');
  const perRound = whole(process.argv[3], 10, 'turns per round');
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-eager-'));
  const server = await startDevServer({
    address: `127.0.0.1:${await freePort()}`,
    namespace: 'default',
    logFile: path.join(folder, 'server.log'),
  });
  try {
    const config = benchConfig(folder, server.address, 'eager-start');
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection });
    const tollgate = new TollgateClient(new Client({ connection }), config);
    const latencies: Record<'eager' | 'normal', number[][]> = { eager: [], normal: [] };
    await worker.runUntil(async () => {
      const turn = async (id: string, eagerStart: boolean) => {
        const started = performance.now();
        await tollgate.startTurn(
          { taskId: id, prompt: 'refunds', model: { provider: 'scripted', script: planScript(id) } },
          { workflowId: id, eagerStart },
        );
        const result = await tollgate.result(id);
        if (result.status !== 'completed' || result.toolCalls.length !== 4) throw new Error(`turn ${id} ended ${result.status}`);
        return performance.now() - started;
      };
      for (let index = 0; index < 10; index++) await turn(`warm-${index}`, index % 2 === 0);
      for (let round = 0; round < rounds; round++) {
        const order: Array<'eager' | 'normal'> = round % 2 === 0 ? ['eager', 'normal'] : ['normal', 'eager'];
        for (const mode of order) {
          const times: number[] = [];
          for (let index = 0; index < perRound; index++) times.push(await turn(`${mode}-${round}-${index}`, mode === 'eager'));
          latencies[mode].push(times);
        }
      }
    });
    const ratios = latencies.eager.map((times, round) => median(times) / median(latencies.normal[round]));
    console.log(
      table(
        ['start', 'latency median ms (all turns)', 'per-round medians ms'],
        (['normal', 'eager'] as const).map((mode) => [
          mode === 'eager' ? 'eager (requestEagerStart, the client on the worker connection)' : 'normal (the same client, no eager start)',
          median(latencies[mode].flat()).toFixed(0),
          latencies[mode].map((times) => median(times).toFixed(0)).join(' / '),
        ]),
      ),
    );
    console.log(
      `\nEager against normal, per-round ratio: ×${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}); ${rounds} rounds of ${perRound} turns each, alternating, the dev server in memory.`,
    );
  } finally {
    await server.stop();
    rmSync(folder, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
