// Worker processes for the fault tests: each can be SIGKILLed at any moment. A spare is started ahead
// of time and stands by with its worker built but not polling, so the worker that replaces a killed
// one takes work at once rather than after a process start (which only waits, and is not under test).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { buildSync } from 'esbuild';
import { PROJECT_ROOT } from '../../config/load-config';
import path from 'node:path';
import { WORKER_READY, WORKER_STANDING_BY } from './worker-standby';

export { WORKER_READY, WORKER_STANDING_BY } from './worker-standby';

/** A worker process built and waiting: `go` makes it poll. */
export interface StandbyWorker {
  child: ChildProcess;
  go(): Promise<ChildProcess>;
}

function waitForLine(child: ChildProcess, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += String(chunk);
      if (!seen.includes(line)) return;
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      resolve();
    };
    const onExit = (code: number | null) => reject(new Error(`the worker process exited before "${line}" (code ${code})`));
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
}

/**
 * A fixture bundled into one CommonJS file (its packages left to node_modules), built once per test
 * process: a kill test starts dozens of workers, and a bundled one starts on half the CPU time of one
 * whose sources the TypeScript loader resolves and reads file by file (1.1 s against 2.2 s here).
 * It lives under .tollgate/, below the project, so that the code finds the project and its packages
 * where it looks for them.
 */
function bundledFixture(fixture: string): string {
  const source = path.join(PROJECT_ROOT, 'test', 'fixtures', `${fixture}.ts`);
  const folder = path.join(PROJECT_ROOT, '.tollgate', 'fixtures');
  const file = path.join(folder, `${fixture}-${process.pid}.cjs`);
  if (!existsSync(file)) {
    mkdirSync(folder, { recursive: true });
    const partial = `${file}.partial`;
    buildSync({
      entryPoints: [source],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      packages: 'external',
      outfile: partial,
      logLevel: 'error',
    });
    renameSync(partial, file);
    process.once('exit', () => rmSync(file, { force: true }));
  }
  return file;
}

/** Starts a fixture (`test/fixtures/<name>.ts`) with its settings and a standby flag; resolves once it stands by. */
export async function standbyWorker(fixture: string, settings: object): Promise<StandbyWorker> {
  const child = spawn(process.execPath, [bundledFixture(fixture), JSON.stringify({ ...settings, standby: true })], {
    cwd: PROJECT_ROOT,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  await waitForLine(child, WORKER_STANDING_BY);
  return {
    child,
    async go() {
      const ready = waitForLine(child, WORKER_READY);
      child.stdin!.write('go\n');
      await ready;
      return child;
    },
  };
}

/** Starts a fixture's worker and resolves once it polls. */
export async function startWorkerProcess(fixture: string, settings: object): Promise<ChildProcess> {
  return (await standbyWorker(fixture, settings)).go();
}

/**
 * A line of workers: `next()` puts the spare to work and starts the next spare in the background,
 * so a replacement takes work as soon as its predecessor is killed.
 */
export function workerLine(fixture: string, settings: object) {
  let spare = standbyWorker(fixture, settings);
  const started: ChildProcess[] = [];
  return {
    /** Every process this line started, for the end of the test. */
    started,
    async next(): Promise<ChildProcess> {
      const worker = await spare;
      started.push(worker.child);
      spare = standbyWorker(fixture, settings);
      // A spare that fails after the test ended must not be an unhandled rejection.
      spare.catch(() => undefined);
      return worker.go();
    },
    /** Kills every process of the line, the spare standing by included. */
    async stop(): Promise<void> {
      const last = await spare.catch(() => undefined);
      if (last) started.push(last.child);
      await Promise.all(started.map(killWorker));
    },
  };
}

/** SIGKILLs a worker process; resolves once it is gone. */
export function killWorker(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}
