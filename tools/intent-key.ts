import { argsDigest, sha256 } from './canonical-json';
import type { ToolDefinition } from './define-tool';

const PLAIN_TASK_ID = /^[A-Za-z0-9_-]{1,60}$/;

/**
 * A task id in the characters a file name and a key can hold, and never shared by two task ids:
 * a plain id (letters, digits, `_`, `-`, at most 60) is kept as it is; any other is cut to a
 * readable prefix and followed by `.` and a hash of the whole id. A plain id holds no `.`, so it
 * can never equal the form of another id.
 */
export function taskSlug(taskId: string): string {
  if (PLAIN_TASK_ID.test(taskId)) return taskId;
  const readable = taskId.replace(/[^A-Za-z0-9_-]+/g, '-').slice(0, 40) || 'task';
  return `${readable}.${sha256(taskId).slice(0, 24)}`;
}

/**
 * The key of a write intent: the tool's own when it defines one, else task + tool + a hash of the
 * full task id and the canonical arguments. Keys hold only `[A-Za-z0-9._-]`, so a tool may name a
 * file by one.
 */
export function intentKey(tool: ToolDefinition, args: unknown, taskId: string): string {
  const custom = tool.idempotencyKey?.(args, { taskId, tool: tool.name });
  if (custom !== undefined) {
    if (!/^[A-Za-z0-9._-]{1,200}$/.test(custom))
      throw new Error(`tool ${tool.name}: idempotencyKey must be 1-200 characters of A-Z a-z 0-9 . _ -`);
    return custom;
  }
  return `${taskSlug(taskId)}.${tool.name}.${sha256(`${taskId}\u0000${argsDigest(args)}`).slice(0, 24)}`;
}
