import { argsDigest, sha256 } from './canonical-json';
import type { ToolDefinition } from './define-tool';

/** A task id cut to the characters a file name and a log line can hold. */
export function taskSlug(taskId: string): string {
  return taskId.replace(/[^A-Za-z0-9_-]+/g, '-').slice(0, 60) || 'task';
}

/**
 * The key of a write intent: the tool's own when it defines one, else task + tool + a hash of the
 * canonical arguments (and of the full task id, so two task ids that share a slug never share keys).
 * Keys hold only `[A-Za-z0-9._-]`, so a tool may name a file by one.
 */
export function intentKey(tool: ToolDefinition, args: unknown, taskId: string): string {
  const custom = tool.idempotencyKey?.(args, { taskId, tool: tool.name });
  if (custom !== undefined) {
    if (!/^[A-Za-z0-9._-]{1,200}$/.test(custom)) throw new Error(`tool ${tool.name}: idempotencyKey must be 1-200 characters of A-Z a-z 0-9 . _ -`);
    return custom;
  }
  return `${taskSlug(taskId)}.${tool.name}.${sha256(`${taskId}\u0000${argsDigest(args)}`).slice(0, 24)}`;
}
