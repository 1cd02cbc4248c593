import type { LanguageModelV4FunctionTool } from '@ai-sdk/provider';
import { z } from 'zod';
import type { CheckedToolCall, ToolPolicy } from '../../common/activity-types';
import { handoffTargetOf, handoffToolName } from '../../common/handoff-names';
import type { AgentRegistry } from '../../agents/agent-registry';
import type { AgentDefinition } from '../../agents/define-agent';
import { argsDigest } from '../../tools/canonical-json';
import type { Redactor } from '../../hardened/redact';

// Handoffs as the model step sees them: a `transfer_to_<agent>` tool per agent the step's agent may
// hand the turn to, and the check of a call of one. A handoff runs no handler: the workflow records
// it and runs the next steps as the other agent.

/** The most characters of a reason the model gives for a handoff. */
export const HANDOFF_REASON_CHARS = 1_000;

const handoffInput = z.strictObject({ reason: z.string().max(HANDOFF_REASON_CHARS).optional() });

const HANDOFF_JSON_SCHEMA = z.toJSONSchema(handoffInput, { io: 'input' }) as LanguageModelV4FunctionTool['inputSchema'];

/**
 * The policy a handoff call carries: it runs no tool and changes nothing outside the turn, so it is
 * recorded as a read that runs once, at once.
 */
export const HANDOFF_POLICY: ToolPolicy = {
  effect: 'read',
  timeoutMs: 0,
  maxAttempts: 1,
  approvalTimeoutMs: 0,
  retry: { initialIntervalMs: 0, backoffCoefficient: 1, maximumIntervalMs: 0 },
  policyDigest: 'handoff',
};

/** The handoff tools offered with the step's agent: one per agent it may hand the turn to. */
export function handoffTools(targets: AgentDefinition[]): LanguageModelV4FunctionTool[] {
  return targets.map((target) => ({
    type: 'function',
    name: handoffToolName(target.name),
    description:
      `Hand this conversation to agent ${target.name}, which answers from the next step on` +
      `${target.description ? `: ${target.description}` : '.'} Give the reason in one sentence.`,
    inputSchema: HANDOFF_JSON_SCHEMA,
  }));
}

/** The agents the step's agent may hand the turn to, as this worker declares them. */
export function handoffTargets(agent: AgentDefinition | undefined, agents: AgentRegistry | undefined): AgentDefinition[] {
  return (agent?.handoffs ?? []).flatMap((name) => {
    const target = agents?.get(name);
    return target ? [target] : [];
  });
}

/**
 * The check of a call named `transfer_to_<agent>` where `<agent>` is an agent of this worker: a
 * handoff when the step's agent lists it (its arguments checked), `forbidden` when it does not.
 * Undefined for any other name: the call is checked as a tool's.
 */
export function checkHandoffCall({
  callId,
  tool,
  args,
  agent,
  agents,
  redactor,
}: {
  callId: string;
  tool: string;
  args: unknown;
  /** The step's agent (undefined: the default agent, which hands off to nobody). */
  agent: AgentDefinition | undefined;
  agents: AgentRegistry | undefined;
  redactor: Redactor;
}): CheckedToolCall | undefined {
  const target = handoffTargetOf(tool);
  if (target === undefined || !agents?.get(target)) return undefined;
  const call = { callId, tool, args, argsDigest: argsDigest(args) };
  const listed = agent?.handoffs ?? [];
  if (!listed.includes(target)) {
    const from = agent ? `agent ${agent.name}` : 'the default agent';
    const message = `${from} may not hand the turn to ${target} (its handoffs: ${listed.length > 0 ? listed.join(', ') : 'none'})`;
    return { ...call, refusal: { code: 'forbidden', message } };
  }
  const parsed = handoffInput.safeParse(args);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length > 0 ? issue.path.map(String).join('.') : '(arguments)';
    return { ...call, policy: HANDOFF_POLICY, refusal: { code: 'invalid_arguments', message: `${where}: ${issue.message}` } };
  }
  const reason = parsed.data.reason === undefined ? undefined : redactor.text(parsed.data.reason);
  return {
    ...call,
    policy: HANDOFF_POLICY,
    summary: `${tool}`,
    handoff: { to: target, ...(reason !== undefined ? { reason } : {}) },
  };
}
