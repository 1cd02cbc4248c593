import { spawnSync } from 'node:child_process';

/** Server processes this process started, by pid; each is killed when the process exits. */
const tracked = new Set<number>();
let hooksInstalled = false;

function childProcesses(): Array<{ pid: number; args: string }> {
  const listed = spawnSync('ps', ['-A', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' });
  if (listed.status !== 0) return [];
  return listed.stdout.split('\n').flatMap((line) => {
    const match = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    return match && Number(match[2]) === process.pid ? [{ pid: Number(match[1]), args: match[3] }] : [];
  });
}

function killTracked(): void {
  for (const pid of tracked) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  tracked.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  killTracked();
  // Only this listener wanted the signal: end the process as the signal would have.
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.once('exit', killTracked);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, onSignal);
}

/**
 * Remembers the server process just started from `executable` (a child of this process), so that it
 * is killed when this process exits or is interrupted, whether or not a teardown ran.
 */
export function trackServerProcess(executable: string): number[] {
  installHooks();
  const started = childProcesses()
    .filter((child) => child.args.startsWith(executable) && !tracked.has(child.pid))
    .map((child) => child.pid);
  for (const pid of started) tracked.add(pid);
  return started;
}

/** Forgets a server process once its teardown stopped it. */
export function untrackServerProcesses(pids: number[]): void {
  for (const pid of pids) tracked.delete(pid);
}
