import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../intents/sqlite-store';
import { createRunTool } from '../../activities/boundary/run-tool';
import { SHELL_LIMITS } from '../../common/defaults';
import { createToolRegistry } from '../../tools/tool-registry';
import { shellTool } from '../../tools/built-in/shell';
import type { ShellLimits } from '../../tools/built-in/shell-limits';
import { runToolOnce, type FlatBoundaryResult } from '../helpers/run-tool-once';
import { eventLoopProbe } from '../helpers/event-loop-probe';

const SECRET = 'tollgate-fake-secret-5d2e8b04';
const MIB = 1024 * 1024;

/** The processes that descend from this one, read from /proc. */
function descendants(): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // The parent's pid is the second field after the command name, which is in parentheses and may hold spaces.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const queue = [process.pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Processes anywhere on the machine whose command line holds `marker`. */
function processesWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * A sandboxed shell whose workspace sits beside an `outside` folder with one file; `unchangedOutside` says whether that
 * folder and the workspace's parent are as they were.
 */
function limitedShell({ timeout = '10s', limits = {} }: { timeout?: string; limits?: Partial<ShellLimits> } = {}) {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'tollgate-limits-'));
  const workspace = path.join(parent, 'workspace');
  const outside = path.join(parent, 'outside');
  mkdirSync(workspace);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'kept.txt'), 'kept');
  const lines: string[] = [];
  const tool = shellTool({ workspace, sandbox: true, limits, log: (line) => lines.push(line) });
  const registry = createToolRegistry({ tools: [tool], overrides: { shell: { timeout } } });
  const runTool = createRunTool({ registry, store: openSqliteStore(':memory:') });
  let calls = 0;
  const run = (command: string): Promise<FlatBoundaryResult> =>
    runToolOnce(runTool, { taskId: 'limits', callId: `call-${calls++}`, tool: 'shell', args: { command } });
  const unchangedOutside = () =>
    readdirSync(parent).sort().join(',') === 'outside,workspace' &&
    readdirSync(outside).join(',') === 'kept.txt' &&
    readFileSync(path.join(outside, 'kept.txt'), 'utf8') === 'kept';
  return { parent, workspace, run, lines, unchangedOutside };
}

/** Runs `hostile` and, half a second in, a harmless call beside it; returns both results, the time taken and the worst event-loop delay. */
async function runBeside(run: (command: string) => Promise<FlatBoundaryResult>, hostile: string) {
  const probe = eventLoopProbe();
  const started = performance.now();
  // An irreversible call cut off by its timeout has an unknown outcome, so the activity fails with that error.
  const hostileCall = run(hostile).then(
    (result) => ({ result: result as FlatBoundaryResult | Error, ms: performance.now() - started }),
    (error: Error) => ({ result: error, ms: performance.now() - started }),
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  const asideStarted = performance.now();
  const aside = await run('echo still-serving');
  const asideMs = performance.now() - asideStarted;
  const { result, ms } = await hostileCall;
  return { result, ms, aside, asideMs, worstDelayMs: probe.stop() };
}

function text(result: FlatBoundaryResult | Error): string {
  return result instanceof Error ? `${result.name}: ${result.message}` : JSON.stringify(result);
}

const parents: string[] = [];

describe('shell resource limits against a hostile command', () => {
  beforeEach(() => {
    process.env.TOLLGATE_FAKE_WORKER_SECRET = SECRET;
  });
  afterEach(() => {
    delete process.env.TOLLGATE_FAKE_WORKER_SECRET;
    // rm(1), not fs.rmSync: Node's recursive removal runs out of stack on the 2000-deep tree below.
    for (const parent of parents.splice(0)) spawnSync('rm', ['-rf', parent]);
  });

  function shell(options?: Parameters<typeof limitedShell>[0]) {
    const made = limitedShell(options);
    parents.push(made.parent);
    return made;
  }

  function expectContained(made: ReturnType<typeof limitedShell>, outcome: Awaited<ReturnType<typeof runBeside>>) {
    expect(made.unchangedOutside()).toBe(true);
    expect(text(outcome.result)).not.toContain(SECRET);
    expect(outcome.aside).toMatchObject({ status: 'success', data: { output: 'still-serving\n' } });
    expect(outcome.asideMs).toBeLessThan(3_000);
    expect(outcome.worstDelayMs).toBeLessThan(500);
  }

  it('says at start which limits apply', () => {
    const { lines } = shell();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/30 s of CPU.*1024 MiB of address space.*64 MiB per file.*64 processes.*1000000 bytes of output/);
  });

  it('refuses limits that are not positive whole numbers, naming the limit', () => {
    const make = () => shellTool({ workspace: os.tmpdir(), sandbox: true, limits: { processes: 0 }, log: () => {} });
    expect(make).toThrow(/processes must be a positive/);
  });

  it('bounds a fork bomb to its process limit and ends it at the timeout, leaving no process behind', async () => {
    const made = shell({ timeout: '4s' });
    // RLIMIT_NPROC does not bind root: without a cgroup nothing would stop the bomb, so it is not started.
    if (process.getuid?.() === 0) expect(made.lines[0], 'root needs a pids cgroup to bound a command').toMatch(/pids cgroup/);
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, descendants().length);
    }, 100);
    const outcome = await runBeside(made.run, ':(){ :|:& };:; sleep 30');
    clearInterval(sampler);
    expect(text(outcome.result)).toMatch(/shell timed out after/);
    expect(outcome.ms).toBeLessThan(7_000);
    // The sandbox's own processes (bwrap and its init) count too, and the harmless call beside adds its few.
    expect(peak).toBeGreaterThan(10);
    expect(peak).toBeLessThanOrEqual(SHELL_LIMITS.processes + 10);
    expectContained(made, outcome);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(descendants()).toEqual([]);
  });

  it('stops a command at 1 MB of output, and the worker holds no more than that', async () => {
    const made = shell();
    const rssBefore = process.memoryUsage().rss;
    const outcome = await runBeside(made.run, "head -c 100000000 /dev/zero | tr '\\0' a; echo finished");
    const grownBytes = process.memoryUsage().rss - rssBefore;
    expect(outcome.result).toMatchObject({ status: 'error', code: 'tool_failure' });
    expect(text(outcome.result)).toMatch(/output passed the limit of 1000000 bytes/);
    expect(text(outcome.result)).not.toContain('finished');
    expect(grownBytes).toBeLessThan(50 * MIB);
    expectContained(made, outcome);
  });

  it('stops a file at the file size limit when a command fills the disk', async () => {
    const made = shell();
    const outcome = await runBeside(made.run, 'head -c 200000000 /dev/zero > big');
    expect(outcome.result).toMatchObject({ status: 'error' });
    expect(text(outcome.result)).toMatch(/SIGXFSZ.*file size limit of 67108864 bytes/);
    expect(statSync(path.join(made.workspace, 'big')).size).toBeLessThanOrEqual(SHELL_LIMITS.fileSizeBytes);
    expectContained(made, outcome);
  });

  it('stops a CPU spin at its CPU time limit', async () => {
    const made = shell({ limits: { cpuSeconds: 2 } });
    const outcome = await runBeside(made.run, 'while :; do :; done');
    expect(outcome.result).toMatchObject({ status: 'error', code: 'tool_failure' });
    expect(text(outcome.result)).toMatch(/SIGXCPU.*CPU time limit of 2 s/);
    expect(outcome.ms).toBeLessThan(8_000);
    expectContained(made, outcome);
  });

  it.skipIf(!['/usr/bin/python3', '/usr/local/bin/python3'].some((file) => existsSync(file)))(
    'refuses a program 2 GB of memory in one allocation',
    async () => {
      const made = shell();
      const outcome = await runBeside(made.run, "python3 -c 'x = bytearray(2**31)'");
      expect(outcome.result).toMatchObject({ status: 'error', code: 'tool_failure' });
      expect(text(outcome.result)).toMatch(/MemoryError/);
      expectContained(made, outcome);
    },
  );

  it('refuses a pipeline that holds 2 GB in memory', async () => {
    const made = shell({ timeout: '40s' });
    const outcome = await runBeside(made.run, 'head -c 2G /dev/zero | tail > /dev/null');
    expect(outcome.result).toMatchObject({ status: 'error', code: 'tool_failure' });
    expect(text(outcome.result)).toMatch(/memory exhausted|SIGKILL/);
    expectContained(made, outcome);
  }, 60_000);

  it('survives a very deep path in the workspace', async () => {
    const made = shell();
    const outcome = await runBeside(made.run, "mkdir -p $(printf 'a/%.0s' {1..2000}) && find . -type d | wc -l");
    expect(outcome.result).toMatchObject({ status: 'success' });
    expect(text(outcome.result)).toContain('2001');
    expectContained(made, outcome);
    expect(await made.run('echo after')).toMatchObject({ status: 'success' });
  });

  it('kills, at the timeout, a background process that ignores SIGTERM', async () => {
    const made = shell({ timeout: '2s' });
    const marker = `tollgate-term-ignorer-${process.pid}`;
    const outcome = await runBeside(made.run, `(trap "" TERM; exec -a ${marker} sleep 300) & trap "" TERM; sleep 300`);
    expect(text(outcome.result)).toMatch(/shell timed out after/);
    expect(outcome.ms).toBeLessThan(5_000);
    expectContained(made, outcome);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(processesWith(marker)).toEqual([]);
  });

  it('leaves no TERM-ignoring background process behind a command that ended', async () => {
    const made = shell();
    const marker = `tollgate-left-behind-${process.pid}`;
    const result = await made.run(`(trap "" TERM HUP; exec -a ${marker} sleep 300) >/dev/null 2>&1 & echo started`);
    expect(result).toMatchObject({ status: 'success' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(processesWith(marker)).toEqual([]);
  });
});

describe('the shell without a sandbox', () => {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'tollgate-limits-'));
  afterAll(() => {
    spawnSync('rm', ['-rf', workspace]);
  });

  it('kills, at the timeout, the whole process group, a child that ignores SIGTERM included', async () => {
    const tool = shellTool({ workspace, sandbox: false, warn: () => {} });
    const registry = createToolRegistry({ tools: [tool], overrides: { shell: { timeout: '2s' } } });
    const runTool = createRunTool({ registry, store: openSqliteStore(':memory:') });
    const marker = `tollgate-unsandboxed-${process.pid}`;
    const started = performance.now();
    const outcome = await runToolOnce(runTool, {
      taskId: 'limits',
      callId: 'unsandboxed',
      tool: 'shell',
      args: { command: `(trap "" TERM; exec -a ${marker} sleep 300) & trap "" TERM; sleep 300` },
    }).catch((error: Error) => error);
    expect(text(outcome)).toMatch(/shell timed out after 2000 ms/);
    expect(performance.now() - started).toBeLessThan(5_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(processesWith(marker)).toEqual([]);
  });
});
