// Runs one throughput variant alone and prints the CPU time per turn of the worker process and of
// the dev server (Linux); for profiling: `node --cpu-prof --import tsx bench/profile-turns.ts <variant> [turns] [inFlight]`.
import { readFileSync } from 'node:fs';
import { withBenchContext } from './context';
import { inLanes } from './lib';
import { runOne, type Variant } from './sections/throughput';

async function main(): Promise<void> {
  const [variant = 'tollgate', turns = '200', lanes = '100'] = process.argv.slice(2);
  await withBenchContext(async (context) => {
    const serverCpu = () => {
      const fields = readFileSync(`/proc/${context.server.process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    };
    const serverBefore = serverCpu();
    const workerBefore = process.cpuUsage();
    const wallMs = await inLanes(Number(turns), Number(lanes), (index) => runOne(context, variant as Variant, `profile-${index}`));
    console.log(`${variant}: ${turns} turns, ${lanes} in flight: ${((Number(turns) * 1000) / wallMs).toFixed(1)} turns/s`);
    const worker = process.cpuUsage(workerBefore);
    console.log(
      `CPU per turn: worker process ${((worker.user + worker.system) / 1000 / Number(turns)).toFixed(1)} ms, server ${((serverCpu() - serverBefore) / Number(turns)).toFixed(1)} ms`,
    );
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
