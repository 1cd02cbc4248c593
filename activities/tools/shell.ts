import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { z } from 'zod';
import type { ToolEffect } from '../../common/codes';
import { defineTool, type ToolDefinition } from '../define-tool';
import { ToolOutcome } from '../tool-outcome';

const MAX_CAPTURE_CHARS = 1_000_000;

/** The arguments of `shell`. */
export const shellInput = z.strictObject({
  command: z.string().min(1).max(4_000).describe('A bash command, run in the workspace folder.'),
});

/**
 * The `shell` tool: runs a bash command in the workspace. Success is the exit code alone: a command
 * that prints "Error:" and exits 0 succeeded; one that prints nothing and exits 1 failed.
 * Irreversible by default, so each command waits for a human approval.
 */
export function shellTool({ workspace, effect = 'irreversible_write' }: { workspace: string; effect?: Extract<ToolEffect, 'read' | 'irreversible_write'> }): ToolDefinition {
  return defineTool({
    name: 'shell',
    description: 'Run a bash command in the workspace folder; returns its exit code and output.',
    input: shellInput,
    effect,
    timeout: '60s',
    maxAttempts: 1,
    maxOutputChars: 8_000,
    handler: ({ command }, { signal }) => {
      mkdirSync(workspace, { recursive: true });
      return new Promise((resolve, reject) => {
        const child = spawn('bash', ['-c', command], { cwd: workspace, signal, stdio: ['ignore', 'pipe', 'pipe'] });
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
