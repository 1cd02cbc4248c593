import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readlinkSync, realpathSync } from 'node:fs';
import { z } from 'zod';
import type { ToolEffect } from '../../common/codes';
import { defineTool, type ToolDefinition } from '../define-tool';
import { ToolOutcome } from '../tool-outcome';

const MAX_CAPTURE_CHARS = 1_000_000;

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
    '--unshare-all', '--unshare-user', '--cap-drop', 'ALL',
    '--die-with-parent', '--new-session', '--clearenv',
    ...system,
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
  ];
}

/**
 * The bubblewrap command line for one shell command: only the system folders a shell needs,
 * read-only; the workspace the only writable place (plus a private /tmp); a user namespace without
 * capabilities; no network; its own process, IPC and host namespaces; an environment of PATH, HOME
 * (the workspace) and LANG alone; and it dies with the worker.
 */
export function sandboxArgs(workspace: string, command: string): string[] {
  const real = realpathSync(workspace);
  return [
    ...isolationArgs(),
    '--bind', real, real,
    '--remount-ro', '/',
    '--setenv', 'PATH', '/usr/local/bin:/usr/bin:/bin',
    '--setenv', 'HOME', real,
    '--setenv', 'LANG', 'C.UTF-8',
    '--chdir', real,
    'bash', '--noprofile', '--norc', '-c', command,
  ];
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
  warn = (line: string) => console.warn(line),
}: {
  workspace: string;
  effect?: Extract<ToolEffect, 'read' | 'irreversible_write'>;
  /** Run each command inside bubblewrap; defaults to whether bubblewrap works here. */
  sandbox?: boolean;
  warn?: (line: string) => void;
}): ToolDefinition {
  if (!sandbox) warn('shell: bubblewrap (bwrap) is not available, so shell commands run unsandboxed and every shell call needs approval');
  return defineTool({
    name: 'shell',
    description: `Run a bash command in the workspace folder${sandbox ? ' (sandboxed: no network, read-only system)' : ''}; returns its exit code and output.`,
    input: shellInput,
    // Without a sandbox nothing bounds what a command may do, so a human approves each one.
    effect: sandbox ? effect : 'irreversible_write',
    timeout: '60s',
    maxAttempts: 1,
    maxOutputChars: 8_000,
    handler: ({ command }, { signal }) => {
      mkdirSync(workspace, { recursive: true });
      return new Promise((resolve, reject) => {
        const child = sandbox
          ? spawn('bwrap', sandboxArgs(workspace, command), { signal, stdio: ['ignore', 'pipe', 'pipe'], env: minimalSpawnEnvironment() })
          : spawn('bash', ['-c', command], { cwd: workspace, signal, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        const collect = (chunk: Buffer) => {
          if (output.length < MAX_CAPTURE_CHARS) output += chunk.toString('utf8');
        };
        child.stdout.on('data', collect);
        child.stderr.on('data', collect);
        child.once('error', reject);
        child.once('close', (exitCode, exitSignal) => {
          if (exitCode === 0) return resolve(ToolOutcome.ok({ exitCode, output }));
          const lastLine = output.trim().split('\n').at(-1)?.slice(0, 300) ?? '';
          const how = exitSignal ? `was ended by ${exitSignal}` : `exited with code ${exitCode}`;
          resolve(ToolOutcome.error(`the command ${how}${lastLine ? `: ${lastLine}` : ''}`, { code: 'tool_failure' }));
        });
      });
    },
  });
}
