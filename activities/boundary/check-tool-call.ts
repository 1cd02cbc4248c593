import { displayText } from '../../common/display-text';
import type { z } from 'zod';
import type { ToolCallRequest } from '../../common/contract/tools';
import type { CheckedToolCall } from '../../common/activity-types';
import { approvalDigest } from '../../tools/canonical-json';
import type { ToolDefinition } from '../../tools/define-tool';
import { EFFECT_TRAITS } from '../../common/effects';
import { createRedactor, type Redactor } from './redact';
import type { ToolRegistry } from '../../tools/tool-registry';

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
  taskId,
  redactor = DEFAULT_REDACTOR,
}: {
  registry: ToolRegistry;
  request: ToolCallRequest;
  allowedTools?: string[];
  /** The turn's task, for tools whose authorization depends on it (a per-task folder, say). */
  taskId?: string;
  /** The worker's redaction pass, for the summary and the arguments shown to approvers (default: the built-in patterns only). */
  redactor?: Redactor;
}): CheckedToolCall {
  const tool = registry.get(request.tool);
  // A tool from elsewhere binds its definition into what an approval names: a changed tool needs a new approval.
  const digest = approvalDigest(request.args, tool?.source?.definitionDigest);
  const call = { ...request, argsDigest: digest, ...shownArguments(request.args, redactor, tool?.source?.definitionDigest) };
  if (!tool) {
    const known = registry
      .list()
      .map((candidate) => candidate.name)
      .join(', ');
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
    denial = tool.authorize?.(parsed.data, { taskId });
  } catch (error) {
    denial = `authorization failed: ${(error as Error).message}`;
  }
  if (denial) return { ...call, policy, refusal: { code: 'forbidden', message: denial } };
  // Recorded with the call only where the tool says otherwise than its effect, so calls checked before it read as they did.
  const waits = needsApproval(tool, parsed.data);
  return {
    ...call,
    policy,
    summary: callSummary(tool, parsed.data, redactor),
    ...(waits !== EFFECT_TRAITS[tool.effect].needsApproval ? { needsApproval: waits } : {}),
  };
}

/** Whether a call of the tool waits for a decision first: its declaration on these arguments (a function that throws: yes, a person decides), else its effect's. */
export function needsApproval(tool: ToolDefinition, args: unknown): boolean {
  const declared = tool.needsApproval;
  if (EFFECT_TRAITS[tool.effect].needsApproval || declared === undefined) return EFFECT_TRAITS[tool.effect].needsApproval;
  if (typeof declared === 'boolean') return declared;
  try {
    return declared(args) !== false;
  } catch {
    return true;
  }
}

const DEFAULT_REDACTOR = createRedactor();

/**
 * The copy of the arguments that may be shown (state query, Web UI, CLI) when a secret had to be
 * replaced in it, with the digest of that copy; nothing when the arguments hold no secret.
 */
export function shownArguments(
  args: unknown,
  redactor: Redactor,
  definitionDigest?: string,
): Pick<CheckedToolCall, 'shownArgs' | 'shownDigest' | 'redactedValues'> {
  const { value, redactedValues } = redactor.value(args);
  return redactedValues === 0 ? {} : { shownArgs: value, shownDigest: approvalDigest(value, definitionDigest), redactedValues };
}

const SUMMARY_CHARS = 80;

/** The Web UI's line for a call: the tool's name and the fields chosen for it, redacted and short. */
export function callSummary(tool: ToolDefinition, args: unknown, redactor: Redactor = DEFAULT_REDACTOR): string {
  const record = (args && typeof args === 'object' ? args : {}) as Record<string, unknown>;
  let detail: string;
  try {
    if (tool.summaryFields)
      detail = tool.summaryFields
        .map((field) => (record[field] === undefined ? '' : String(record[field])))
        .filter(Boolean)
        .join(' ');
    else if (tool.summary) detail = tool.summary(args);
    else detail = String(Object.values(record).find((value) => typeof value === 'string') ?? '');
  } catch {
    detail = '';
  }
  // Marked as every surface marks hidden characters: the Web UI shows this line beside the call.
  const line = displayText(redactor.text(`${tool.name} ${detail.replace(/\s+/g, ' ')}`.trim()));
  return line.length > SUMMARY_CHARS ? `${line.slice(0, SUMMARY_CHARS - 1)}…` : line;
}
