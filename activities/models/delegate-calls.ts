import type { LanguageModelV4FunctionTool } from '@ai-sdk/provider';
import { z } from 'zod';
import type { CheckedToolCall, ToolPolicy } from '../../common/activity-types';
import { TOOL_EFFECTS, type ToolEffect } from '../../common/codes';
import type { AgentRegistry } from '../../agents/agent-registry';
import type { AgentDefinition } from '../../agents/define-agent';
import { argsDigest } from '../../tools/canonical-json';
import type { ToolRegistry } from '../../tools/tool-registry';
import type { Redactor } from '../../hardened/redact';
import { displayText } from '../../common/display-text';

// Subagents as the model step sees them: a tool named after each agent the step's agent may call,
// taking `{ request }`, and the check of a call of one. The workflow runs an accepted call as a
// child turn of the subagent.

/** The most characters of a request the model sends a subagent. */
export const DELEGATE_REQUEST_CHARS = 20_000;

const delegateInput = z.strictObject({ request: z.string().trim().min(1).max(DELEGATE_REQUEST_CHARS) });

const DELEGATE_JSON_SCHEMA = z.toJSONSchema(delegateInput, { io: 'input' }) as LanguageModelV4FunctionTool['inputSchema'];

/** The subagents of the step's agent, as this worker declares them. */
export function subagentsOf(agent: AgentDefinition | undefined, agents: AgentRegistry | undefined): AgentDefinition[] {
  return (agent?.subagents ?? []).flatMap((name) => {
    const target = agents?.get(name);
    return target ? [target] : [];
  });
}

/** The delegate tools offered with the step's agent: one per subagent, named after it, described by its description. */
export function delegateTools(subagents: AgentDefinition[]): LanguageModelV4FunctionTool[] {
  return subagents.map((subagent) => ({
    type: 'function',
    name: subagent.name,
    description: subagent.description ?? `Asks agent ${subagent.name} to do a task and returns its answer.`,
    inputSchema: DELEGATE_JSON_SCHEMA,
  }));
}

/**
 * The strongest effect among the tools an agent may use, through its own subagents and handoffs
 * (read < reversible_write < irreversible_write): what a call of it may do, at most. A tool list
 * left out is every tool the worker serves. A turn's own tool list is not taken off: the effect may
 * only be overstated, which costs a retry, never understated, which could repeat a write.
 */
export function delegateEffect({
  agent,
  agents,
  registry,
}: {
  agent: AgentDefinition;
  agents: AgentRegistry | undefined;
  registry: ToolRegistry;
}): ToolEffect {
  let strongest = 0;
  const seen = new Set<string>();
  // A worklist rather than recursion: a long chain of agents costs no stack.
  const pending: AgentDefinition[] = [agent];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (seen.has(next.name)) continue;
    seen.add(next.name);
    for (const tool of registry.list()) {
      if (next.tools && !next.tools.includes(tool.name)) continue;
      strongest = Math.max(strongest, TOOL_EFFECTS.indexOf(tool.effect));
    }
    // Handoff targets as well (declared by agents that hand the turn on).
    const handoffs = (next as { handoffs?: readonly string[] }).handoffs ?? [];
    for (const name of [...(next.subagents ?? []), ...handoffs]) {
      const reached = agents?.get(name);
      if (reached) pending.push(reached);
    }
  }
  return TOOL_EFFECTS[strongest];
}

/** The policy a delegate call carries: its effect for the parent, no timeout or attempts of its own (the child turn has its limits). */
function delegatePolicy(subagent: AgentDefinition, effect: ToolEffect): ToolPolicy {
  return {
    effect,
    timeoutMs: 0,
    maxAttempts: 1,
    approvalTimeoutMs: 0,
    retry: { initialIntervalMs: 0, backoffCoefficient: 1, maximumIntervalMs: 0 },
    policyDigest: `delegate:${subagent.digest}`,
  };
}

/**
 * The check of a call named after an agent of this worker that is no tool of it: a delegate call
 * when the step's agent lists the agent among its subagents (its `{ request }` checked), `forbidden`
 * when it does not. Undefined for any other name: the call is checked as a tool's.
 */
export function checkDelegateCall({
  callId,
  tool,
  args,
  agent,
  agents,
  registry,
  redactor,
}: {
  callId: string;
  tool: string;
  args: unknown;
  /** The step's agent (undefined: the default agent, which has no subagents). */
  agent: AgentDefinition | undefined;
  agents: AgentRegistry | undefined;
  registry: ToolRegistry;
  redactor: Redactor;
}): CheckedToolCall | undefined {
  const subagent = agents?.get(tool);
  if (!subagent || registry.get(tool)) return undefined;
  const call = { callId, tool, args, argsDigest: argsDigest(args) };
  const listed = agent?.subagents ?? [];
  if (!listed.includes(tool)) {
    const from = agent ? `agent ${agent.name}` : 'the default agent';
    const message = `${from} may not call agent ${tool} (its subagents: ${listed.length > 0 ? listed.join(', ') : 'none'})`;
    return { ...call, refusal: { code: 'forbidden', message } };
  }
  const policy = delegatePolicy(subagent, delegateEffect({ agent: subagent, agents, registry }));
  const parsed = delegateInput.safeParse(args);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length > 0 ? issue.path.map(String).join('.') : '(arguments)';
    return { ...call, policy, refusal: { code: 'invalid_arguments', message: `${where}: ${issue.message}` } };
  }
  const request = parsed.data.request;
  const summary = displayText(redactor.text(`${tool} ${request.replace(/\s+/g, ' ')}`));
  return {
    ...call,
    policy,
    summary: summary.length > 80 ? `${summary.slice(0, 79)}…` : summary,
    delegate: { agent: tool, request },
  };
}
