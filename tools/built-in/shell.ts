import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readlinkSync, realpathSync } from 'node:fs';
import { constants } from 'node:os';
import { z } from 'zod';
import type { ToolEffect } from '../../common/codes';
import { SHELL_LIMITS } from '../../common/defaults';
import { defineTool, type ToolDefinition } from '../define-tool';
import { ToolOutcome } from '../tool-outcome';
import {
  checkShellLimits,
  createCallCgroup,
  describeShellLimits,
  findCgroupBase,
  rlimitPrologue,
  type CallCgroup,
  type ShellLimits,
} from './shell-limits';

/** The arguments of `shell`. */
export const shellInput = z.strictObject({
  command: z.string().min(1).max(4_000).describe('A bash command, run in the workspace folder.'),
});

/** Whether bubblewrap (Debian's `bubblewrap`, command `bwrap`) can run the sandbox here, user namespace included. */
export function bubblewrapAvailable(): boolean {
  const probe = spawnSync('bwrap', [...isolationArgs(), 'true'], { stdio: 'ignore', timeout: 5_000, env: minimalSpawnEnvironment() });
  return probe.status === 0;
}

/** Folders of the system a shell needs, bound read-only (symlinks such as /bin -> usr/bin kept as links). */
const SYSTEM_FOLDERS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Single files of /etc that programs need to start (loader cache, Debian's alternatives); nothing else of /etc. */
const SYSTEM_FILES = ['/etc/alternatives', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/localtime'];

// The worker's environment holds secrets (store URLs, keyrings, API keys); bwrap itself gets only PATH.
function minimalSpawnEnvironment(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin' };
}

// A user namespace with every capability dropped keeps root's powers (remount, raw devices) out even when the worker runs as root.
function isolationArgs(): string[] {
  const system: string[] = [];
  for (const folder of SYSTEM_FOLDERS) {
    if (!existsSync(folder)) continue;
    const stat = lstatSync(folder);
    if (stat.isSymbolicLink()) system.push('--symlink', readlinkSync(folder), folder);
    else if (stat.isDirectory()) system.push('--ro-bind', folder, folder);
  }
  for (const file of SYSTEM_FILES) system.push('--ro-bind-try', file, file);
  return [
    '--unshare-all',
    '--unshare-user',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    ...system,
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
  ];
}

/**
 * The bubblewrap command line for one shell command: only the system folders a shell needs,
 * read-only; the workspace the only writable place (plus a private /tmp); a user namespace without
 * capabilities; no network; its own process, IPC and host namespaces; an environment of PATH, HOME
 * (the workspace) and LANG alone; hard rlimits (CPU, address space, file size, processes); and it dies with the worker.
 */
export function sandboxArgs(workspace: string, command: string, limits: ShellLimits = SHELL_LIMITS): string[] {
  const real = realpathSync(workspace);
  return [
    ...isolationArgs(),
    '--bind',
    real,
    real,
    '--remount-ro',
    '/',
    '--setenv',
    'PATH',
    '/usr/local/bin:/usr/bin:/bin',
    '--setenv',
    'HOME',
    real,
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--chdir',
    real,
    'bash',
    '--noprofile',
    '--norc',
    '-c',
    `${rlimitPrologue(limits)}; exec bash --noprofile --norc -c "$1"`,
    'bash',
    command,
  ];
}

// What a signal that ended a command means when one of the limits sent it.
function signalHint(name: string, limits: ShellLimits): string {
  if (name === 'SIGXCPU') return ` (its CPU time limit of ${limits.cpuSeconds} s)`;
  if (name === 'SIGXFSZ') return ` (its file size limit of ${limits.fileSizeBytes} bytes)`;
  return '';
}

// A bash exit code above 128 is 128 plus the number of the signal that ended the process.
function signalName(exitCode: number | null, exitSignal: NodeJS.Signals | null): string | undefined {
  if (exitSignal) return exitSignal;
  if (exitCode === null || exitCode <= 128) return undefined;
  return Object.entries(constants.signals).find(([, number]) => number === exitCode - 128)?.[0];
}

/** How one command runs: its argv, whether it has a process group of its own to kill, and its cgroup if any. */
interface CommandRun {
  argv: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  ownGroup: boolean;
  cgroup?: CallCgroup;
  limits: ShellLimits;
  signal: AbortSignal;
}

/**
 * Runs one command, reading at most `limits.outputBytes` of stdout and stderr together: past that, or when `signal`
 * aborts, the whole process tree is killed (the sandbox's process namespace, the cgroup, or the process group).
 */
function runCommand({ argv, cwd, env, ownGroup, cgroup, limits, signal }: CommandRun): Promise<ToolOutcome> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: ownGroup });
    const killTree = () => {
      cgroup?.kill();
      try {
        if (ownGroup && child.pid) process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        // Already ended.
      }
    };
    const onAbort = () => {
      killTree();
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const chunks: Buffer[] = [];
    let bytes = 0;
    let truncated = false;
    const collect = (chunk: Buffer) => {
      if (truncated) return;
      const room = limits.outputBytes - bytes;
      chunks.push(chunk.subarray(0, room));
      bytes += Math.min(room, chunk.length);
      if (chunk.length > room) {
        truncated = true;
        killTree();
      }
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.once('close', (exitCode, exitSignal) => {
      signal.removeEventListener('abort', onAbort);
      // Whatever the command left running (a background process that ignores SIGTERM) ends with it.
      killTree();
      const output = Buffer.concat(chunks).toString('utf8');
      const lastLine = output.trim().split('\n').at(-1)?.slice(0, 300) ?? '';
      if (truncated) {
        const message = `the command was stopped: its output passed the limit of ${limits.outputBytes} bytes (stdout and stderr together)`;
        const tail = lastLine ? `; it ended with: ${lastLine.slice(0, 100)}` : '';
        return resolve(ToolOutcome.error(`${message}${tail}`, { code: 'tool_failure' }));
      }
      if (exitCode === 0) return resolve(ToolOutcome.ok({ exitCode, output }));
      const name = signalName(exitCode, exitSignal);
      const how = name ? `was ended by ${name}${signalHint(name, limits)}` : `exited with code ${exitCode}`;
      resolve(ToolOutcome.error(`the command ${how}${lastLine ? `: ${lastLine}` : ''}`, { code: 'tool_failure' }));
    });
  });
}

/**
 * The `shell` tool: runs a bash command in the workspace. Success is the exit code alone: a command
 * that prints "Error:" and exits 0 succeeded; one that prints nothing and exits 1 failed.
 * Irreversible by default, so each command waits for a human approval.
 */
export function shellTool({
  workspace,
  effect = 'irreversible_write',
  sandbox = bubblewrapAvailable(),
  limits: limitOverrides = {},
  warn = (line: string) => console.warn(line),
  log = (line: string) => console.info(line),
}: {
  workspace: string;
  effect?: Extract<ToolEffect, 'read' | 'irreversible_write'>;
  /** Run each command inside bubblewrap; defaults to whether bubblewrap works here. */
  sandbox?: boolean;
  /** Bounds of each sandboxed command; each left out is SHELL_LIMITS'. */
  limits?: Partial<ShellLimits>;
  warn?: (line: string) => void;
  /** Receives the line, at start, that says which limits apply. */
  log?: (line: string) => void;
}): ToolDefinition {
  const limits = checkShellLimits({ ...SHELL_LIMITS, ...limitOverrides });
  const cgroupBase = sandbox ? findCgroupBase() : { reason: 'no sandbox' };
  if (!sandbox) warn('shell: bubblewrap (bwrap) is not available, so shell commands run unsandboxed and every shell call needs approval');
  else log(describeShellLimits(limits, cgroupBase));
  return defineTool({
    name: 'shell',
    description: `Run a bash command in the workspace folder${sandbox ? ' (sandboxed: no network, read-only system)' : ''}; returns its exit code and output.`,
    input: shellInput,
    // Without a sandbox nothing bounds what a command may do, so a human approves each one.
    effect: sandbox ? effect : 'irreversible_write',
    timeout: '60s',
    maxAttempts: 1,
    maxOutputChars: 8_000,
    handler: async ({ command }, { signal }) => {
      mkdirSync(workspace, { recursive: true });
      if (!sandbox) return runCommand({ argv: ['bash', '-c', command], cwd: workspace, ownGroup: true, limits, signal });
      const cgroup = 'kind' in cgroupBase ? createCallCgroup(cgroupBase, limits) : undefined;
      const argv = ['bwrap', ...sandboxArgs(workspace, command, limits)];
      try {
        const env = minimalSpawnEnvironment();
        return await runCommand({ argv: cgroup ? cgroup.wrap(argv) : argv, env, ownGroup: false, cgroup, limits, signal });
      } finally {
        void cgroup?.remove();
      }
    },
  });
}
