import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, realpathSync } from 'node:fs';
import { z } from 'zod';
import type { ToolEffect } from '../../common/codes';
import { defineTool, type ToolDefinition } from '../define-tool';
import { ToolOutcome } from '../tool-outcome';

const MAX_CAPTURE_CHARS = 1_000_000;

/** The arguments of `shell`. */
export const shellInput = z.strictObject({
  command: z.string().min(1).max(4_000).describe('A bash command, run in the workspace folder.'),
});

/** Whether bubblewrap (Debian's `bubblewrap`, command `bwrap`) can run a sandbox here. */
export function bubblewrapAvailable(): boolean {
  const probe = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-net', '--die-with-parent', 'true'], { stdio: 'ignore', timeout: 5_000 });
  return probe.status === 0;
}

/**
 * The bubblewrap command line for one shell command: the whole system read-only, the workspace the
 * only writable place (plus a private /tmp), no network, its own process, IPC and host namespaces,
 * and it dies with the worker.
 */
export function sandboxArgs(workspace: string, command: string): string[] {
  const real = realpathSync(workspace);
  return [
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
    '--bind', real, real,
    '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
    '--die-with-parent', '--new-session',
    '--chdir', real,
    'bash', '-c', command,
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
          ? spawn('bwrap', sandboxArgs(workspace, command), { signal, stdio: ['ignore', 'pipe', 'pipe'] })
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
