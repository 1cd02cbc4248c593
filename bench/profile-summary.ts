// Where a worker's CPU time went after the warm-up: reads the V8 CPU profiles that the peer section
// writes with BENCH_PEERS_CPU_PROF=<folder> (one per thread of each worker) and its marks.json (each
// worker's monotonic clock when the warm-up ended), keeps the samples after the mark, and prints per
// worker the self time by place (a project file, a package, Node itself) and by function.
// Usage: npx tsx bench/profile-summary.ts <folder> [--top N]
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The self time of one worker process after its mark, in µs, by place and by function. */
export interface WorkerProfile {
  pid: number;
  variant: string;
  threads: number;
  totalUs: number;
  byPlace: Map<string, number>;
  byFunction: Map<string, number>;
}

/** Where a frame's code lives: a project file, an npm package, Node's own code, or V8 (GC, the idle loop, native code). */
export function placeOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : `(native) ${functionName || 'anonymous'}`;
  if (url.startsWith('node:')) return url;
  const file = url.replace(/^file:\/\//, '');
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (inPackage) return inPackage[1];
  if (!file.startsWith('/')) return `workflow bundle: ${path.basename(file)}`;
  return path.relative(process.cwd(), file);
}

/** Adds the self time of each sample at or after `fromUs` to its place and function. */
export function addSamples(profile: CpuProfile, fromUs: number, into: WorkerProfile): void {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  let time = profile.startTime;
  for (let index = 0; index < profile.samples.length; index++) {
    time += profile.timeDeltas[index] ?? 0;
    const delta = profile.timeDeltas[index + 1] ?? 0;
    if (time < fromUs) continue;
    const frame = frames.get(profile.samples[index]);
    if (!frame || frame.functionName === '(idle)') continue;
    const place = placeOf(frame);
    into.totalUs += delta;
    into.byPlace.set(place, (into.byPlace.get(place) ?? 0) + delta);
    const name = `${frame.functionName || '(anonymous)'} ${place}:${frame.lineNumber + 1}`;
    into.byFunction.set(name, (into.byFunction.get(name) ?? 0) + delta);
  }
}

/** Reads the folder: each worker's profiles, counted from its mark. */
export function summarize(folder: string): WorkerProfile[] {
  const marks = JSON.parse(readFileSync(path.join(folder, 'marks.json'), 'utf8')) as Record<
    string,
    { variant: string; monotonicUs: number }
  >;
  const workers = new Map<number, WorkerProfile>();
  for (const file of readdirSync(folder).filter((name) => name.endsWith('.cpuprofile'))) {
    // CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile
    const pid = Number(file.split('.')[3]);
    const mark = marks[String(pid)];
    if (mark === undefined) continue;
    const worker = workers.get(pid) ?? { pid, variant: mark.variant, threads: 0, totalUs: 0, byPlace: new Map(), byFunction: new Map() };
    worker.threads++;
    addSamples(JSON.parse(readFileSync(path.join(folder, file), 'utf8')) as CpuProfile, mark.monotonicUs, worker);
    workers.set(pid, worker);
  }
  return [...workers.values()];
}

function top(entries: Map<string, number>, totalUs: number, count: number): string[] {
  return [...entries.entries()]
    .sort((left, right) => right[1] - left[1])
    .slice(0, count)
    .map(([name, us]) => `| ${name} | ${(us / 1000).toFixed(0)} | ${((us / totalUs) * 100).toFixed(1)} % |`);
}

function main(): void {
  const [folder] = process.argv.slice(2).filter((argument) => !argument.startsWith('--'));
  if (!folder) throw new Error('usage: npx tsx bench/profile-summary.ts <folder written with BENCH_PEERS_CPU_PROF> [--top N]');
  const topIndex = process.argv.indexOf('--top');
  const count = topIndex > 0 ? Number(process.argv[topIndex + 1]) : 25;
  if (!Number.isInteger(count) || count < 1) throw new Error(`--top must be a whole number ≥ 1, got "${process.argv[topIndex + 1]}"`);
  const workers = summarize(path.resolve(folder));
  if (workers.length === 0) throw new Error(`${folder} holds no CPU profile of a worker named in its marks.json`);
  for (const worker of workers) {
    console.log(
      `\n## ${worker.variant} (worker ${worker.pid}): ${(worker.totalUs / 1000).toFixed(0)} ms on the CPU after the warm-up, ${worker.threads} threads\n`,
    );
    console.log('| place | self ms | share |\n|---|---|---|');
    console.log(top(worker.byPlace, worker.totalUs, count).join('\n'));
    console.log('\n| function | self ms | share |\n|---|---|---|');
    console.log(top(worker.byFunction, worker.totalUs, count).join('\n'));
  }
}

if (require.main === module) main();
