// Worker processes for the fault tests: each can be SIGKILLed at any moment. A spare is started ahead
// of time and stands by with its worker built but not polling, so the worker that replaces a killed
// one takes work at once rather than after a process start (which only waits, and is not under test).
import { spawn, type ChildProcess } from 'node:child_process';
import { PROJECT_ROOT } from '../../config/load-config';
import path from 'node:path';

/** What a fixture prints once it polls, and once it is built and waits for `go` on its standard input. */
export const WORKER_READY = 'worker ready';
export const WORKER_STANDING_BY = 'worker standing by';

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

/** Starts a fixture (`test/fixtures/<name>.ts`) with its settings and a standby flag; resolves once it stands by. */
export async function standbyWorker(fixture: string, settings: object): Promise<StandbyWorker> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(PROJECT_ROOT, 'test', 'fixtures', `${fixture}.ts`), JSON.stringify({ ...settings, standby: true })],
    { cwd: PROJECT_ROOT, stdio: ['pipe', 'pipe', 'ignore'] },
  );
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

/** In a fixture: when started to stand by, says so and waits for `go` on standard input. */
export async function standByIfAsked(settings: { standby?: boolean }): Promise<void> {
  if (!settings.standby) return;
  console.log(WORKER_STANDING_BY);
  await new Promise<void>((resolve) => {
    let seen = '';
    process.stdin.on('data', (chunk) => {
      seen += String(chunk);
      if (seen.includes('go\n')) resolve();
    });
  });
  process.stdin.pause();
}
