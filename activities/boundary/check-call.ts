import type { CheckCallInput, CheckedToolCall } from '../../common/activity-types';
import type { ToolRegistry } from '../../tools/tool-registry';
import { checkToolCall } from './check-tool-call';
import type { Redactor } from './redact';

/**
 * The `checkCall` local activity: the boundary's checks (the tool, the turn's tool list, the
 * schema, the tool's own authorization) for arguments a person edited on approval, exactly as a
 * model's call passes them in its model step. The answer carries the edited arguments' digest and
 * the policy the call runs under, or the refusal.
 */
export function createCheckCall({ registry, redactor }: { registry: ToolRegistry; redactor: Redactor }) {
  return async function checkCall({ taskId, callId, tool, args, allowedTools }: CheckCallInput): Promise<CheckedToolCall> {
    return checkToolCall({ registry, request: { callId, tool, args }, allowedTools, taskId, redactor });
  };
}
