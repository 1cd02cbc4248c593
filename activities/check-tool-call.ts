import type { z } from 'zod';
import type { CheckedToolCall, ToolCallRequest } from '../common/types';
import { argsDigest } from './canonical-json';
import type { ToolRegistry } from './tool-registry';

function describeIssues(issues: z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.map(String).join('.') : '(arguments)'}: ${issue.message}`)
    .join('; ');
}

/**
 * The boundary's checks before anything executes: the tool exists, the turn may call it, the
 * arguments fit its schema, and the tool's own authorization (a path guard, say) allows them.
 * A refused call carries its code and is never scheduled.
 */
export function checkToolCall({
  registry,
  request,
  allowedTools,
}: {
  registry: ToolRegistry;
  request: ToolCallRequest;
  allowedTools?: string[];
}): CheckedToolCall {
  const call = { ...request, argsDigest: argsDigest(request.args) };
  const tool = registry.get(request.tool);
  if (!tool) {
    const known = registry.list().map((candidate) => candidate.name).join(', ');
    return { ...call, refusal: { code: 'unknown_tool', message: `no tool named "${request.tool}"; available: ${known}` } };
  }
  const policy = registry.policy(request.tool)!;
  if (allowedTools && !allowedTools.includes(request.tool)) {
    return { ...call, policy, refusal: { code: 'forbidden', message: `this task may not call ${request.tool}` } };
  }
  const parsed = tool.input.safeParse(request.args);
  if (!parsed.success) {
    return { ...call, policy, refusal: { code: 'invalid_arguments', message: describeIssues(parsed.error.issues) } };
  }
  let denial: string | undefined;
  try {
    denial = tool.authorize?.(parsed.data);
  } catch (error) {
    denial = `authorization failed: ${(error as Error).message}`;
  }
  if (denial) return { ...call, policy, refusal: { code: 'forbidden', message: denial } };
  return { ...call, policy };
}
