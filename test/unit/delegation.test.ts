// Subagents, the parts without a server: how agents name them (code and config), the registry's
// checks at worker start, the effect a delegate call carries, the refusals of delegation (cycle,
// depth), a child's share of its parent's limits and what a child's end gives the parent's call.
import { ApplicationFailure, ChildWorkflowFailure, RetryState, TerminatedFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkDelegateCall, delegateEffect, delegateTools } from '../../activities/models/delegate-calls';
import { agentsFromConfig } from '../../agents/agent-config';
import { createAgentRegistry } from '../../agents/agent-registry';
import { defineAgent, type AgentDefinition } from '../../agents/define-agent';
import type { CheckedToolCall } from '../../common/activity-types';
import type { AgentTurnResult } from '../../common/contract/turn';
import { createRedactor } from '../../hardened/redact';
import { defineTool } from '../../tools/define-tool';
import { createToolRegistry } from '../../tools/tool-registry';
import { childShares } from '../../workflows/delegation/child-limits';
import { outcomeOfChild, outcomeOfFailure } from '../../workflows/delegation/delegate-outcome';
import { childLineage, delegationRefusal, lineageProblem } from '../../workflows/delegation/lineage';
import type { TurnRun } from '../../workflows/turn/turn-run';

const tool = (name: string, effect: 'read' | 'irreversible_write') =>
  defineTool({ name, description: name, input: z.strictObject({ id: z.string() }), effect, handler: () => 'ok' });
const lookup = tool('lookup_order', 'read');
const refund = tool('refund_order', 'irreversible_write');
const tools = createToolRegistry({ tools: [lookup, refund] });
const toolNames = ['lookup_order', 'refund_order'];

describe('subagents in an agent’s tools', () => {
  it('takes agents (definitions and agent:<name>) out of the tool list, in code and in the config', () => {
    const researcher = defineAgent({ name: 'researcher', tools: [lookup] });
    const lead = defineAgent({ name: 'lead', tools: [researcher, 'agent:writer', lookup, 'refund_order'] });
    expect(lead.tools).toEqual(['lookup_order', 'refund_order']);
    expect(lead.subagents).toEqual(['researcher', 'writer']);
    const [fromConfig] = agentsFromConfig({ lead: { tools: ['agent:researcher', 'agent:writer', 'lookup_order', 'refund_order'] } });
    expect(fromConfig.subagents).toEqual(['researcher', 'writer']);
    expect(fromConfig.tools).toEqual(['lookup_order', 'refund_order']);
    // An agent with only subagents has no tool of its own (not every tool).
    expect(defineAgent({ name: 'only', tools: [researcher] }).tools).toEqual([]);
  });

  it('keeps the digest of an agent without subagents, and changes it with them', () => {
    const plain = defineAgent({ name: 'lead', tools: [lookup] });
    const withSubagent = defineAgent({ name: 'lead', tools: [lookup, 'agent:researcher'] });
    expect(withSubagent.digest).not.toBe(plain.digest);
    expect(defineAgent({ name: 'lead', tools: ['agent:researcher', lookup] }).digest).toBe(withSubagent.digest);
  });

  it('refuses a malformed subagent naming the agent and the entry', () => {
    expect(() => defineAgent({ name: 'lead', tools: ['agent:Bad Name'] })).toThrow(
      /defineAgent\(lead\)\.tools: holds "Bad Name", not an agent/,
    );
    expect(() => defineAgent({ name: 'lead', tools: ['agent:lead'] })).toThrow(/names the agent itself \(lead\)/);
    expect(() => defineAgent({ name: 'lead', tools: ['agent:x', 'agent:x'] })).toThrow(/names agent x twice/);
  });

  it('is checked at worker start: an unknown subagent, and a subagent named like a served tool (both named)', () => {
    const lead = defineAgent({ name: 'lead', tools: ['agent:researcher'] });
    expect(() => createAgentRegistry({ agents: [lead], toolNames })).toThrow(
      /agent lead: subagent "researcher" is not an agent of this worker \(agents: lead\)/,
    );
    const clash = defineAgent({ name: 'lookup_order', tools: [] });
    const caller = defineAgent({ name: 'caller', tools: ['agent:lookup_order'] });
    expect(() => createAgentRegistry({ agents: [clash, caller], toolNames })).toThrow(
      /agent caller: its subagent lookup_order is offered to the model as the tool "lookup_order", which is also the name of a tool the worker serves/,
    );
    // A cycle of subagents is declared freely: a turn refuses it when it would happen.
    const alpha = defineAgent({ name: 'alpha', tools: ['agent:beta'] });
    const beta = defineAgent({ name: 'beta', tools: ['agent:alpha'] });
    expect(createAgentRegistry({ agents: [alpha, beta], toolNames }).names()).toEqual(['alpha', 'beta']);
  });
});

describe('a delegate call as the model step checks it', () => {
  const reader = defineAgent({ name: 'reader', description: 'Reads orders.', tools: [lookup] });
  const refunder = defineAgent({ name: 'refunder', tools: [refund] });
  const middle = defineAgent({ name: 'middle', tools: [lookup, 'agent:refunder'] });
  const everything = defineAgent({ name: 'everything' });
  const lead = defineAgent({ name: 'lead', tools: ['agent:reader', 'agent:middle'] });
  const all: AgentDefinition[] = [reader, refunder, middle, everything, lead];
  const agents = createAgentRegistry({ agents: all, toolNames });
  const redactor = createRedactor();

  it('carries the strongest effect among the tools the subagent may use, through its own subagents', () => {
    expect(delegateEffect({ agent: reader, agents, registry: tools })).toBe('read');
    expect(delegateEffect({ agent: middle, agents, registry: tools })).toBe('irreversible_write');
    // No tool list: every tool the worker serves.
    expect(delegateEffect({ agent: everything, agents, registry: tools })).toBe('irreversible_write');
    expect(delegateEffect({ agent: defineAgent({ name: 'idle', tools: [] }), agents, registry: tools })).toBe('read');
  });

  it('is offered as a tool of the agent’s name and description taking { request }', () => {
    const [offered] = delegateTools([reader]);
    expect(offered).toMatchObject({ type: 'function', name: 'reader', description: 'Reads orders.' });
    expect(offered.inputSchema).toMatchObject({ type: 'object', required: ['request'] });
  });

  it('is accepted for a listed subagent, refused forbidden for another agent, invalid_arguments without a request', () => {
    const check = (toolName: string, args: unknown, agent: AgentDefinition | undefined = lead) =>
      checkDelegateCall({ callId: 'call-0-0', tool: toolName, args, agent, agents, registry: tools, redactor }) as CheckedToolCall;
    expect(check('middle', { request: 'Refund 7.' })).toMatchObject({
      delegate: { agent: 'middle', request: 'Refund 7.' },
      policy: { effect: 'irreversible_write', maxAttempts: 1 },
      summary: 'middle Refund 7.',
    });
    expect(check('refunder', { request: 'x' }).refusal).toEqual({
      code: 'forbidden',
      message: 'agent lead may not call agent refunder (its subagents: reader, middle)',
    });
    // The default agent (no agent) has no subagents.
    const byDefault = checkDelegateCall({
      callId: 'c',
      tool: 'reader',
      args: { request: 'x' },
      agent: undefined,
      agents,
      registry: tools,
      redactor,
    });
    expect(byDefault?.refusal).toEqual({ code: 'forbidden', message: 'the default agent may not call agent reader (its subagents: none)' });
    expect(check('reader', { question: 'x' }).refusal?.code).toBe('invalid_arguments');
    expect(check('reader', { request: '   ' }).refusal?.code).toBe('invalid_arguments');
    // A name that is no agent is left to the tool checks.
    expect(check('lookup_order', { id: '1' })).toBeUndefined();
  });
});

/** A turn run as far as the delegation parts read it. */
function runOf({
  agent,
  lineage,
  limits = {},
  events = 0,
  errors = 0,
  budget,
}: {
  agent?: string;
  lineage?: TurnRun['input']['lineage'];
  limits?: Record<string, number>;
  events?: number;
  errors?: number;
  budget?: number;
}): TurnRun {
  return {
    input: { taskId: 't', prompt: 'p', ...(lineage ? { lineage } : {}) },
    ...(agent ? { agent: { name: agent, digest: 'd' } } : {}),
    settings: { limits: { maxSteps: 10, maxToolCalls: 20, errorBudget: 3, deadlineMs: 3_600_000, maxDepth: 3, ...limits } },
    events: Array.from({ length: events }, () => ({})),
    errors,
    startedAt: Date.now(),
    usage: { inputTokens: 100, outputTokens: 50 },
    ...(budget !== undefined ? { budget } : {}),
  } as unknown as TurnRun;
}

describe('delegation refused', () => {
  it('refuses a cycle and a depth past maxDepth, naming the path', () => {
    const root = runOf({ agent: 'alpha' });
    expect(delegationRefusal(root, 'beta')).toBeUndefined();
    const lineage = childLineage({ run: root, workflowId: 'w', callId: 'call-0-0', agent: 'beta', request: 'go' });
    expect(lineage).toEqual({
      rootWorkflowId: 'w',
      parentWorkflowId: 'w',
      parentCallId: 'call-0-0',
      path: ['alpha', 'beta'],
      request: 'go',
      depth: 1,
    });
    const child = runOf({ agent: 'beta', lineage });
    expect(delegationRefusal(child, 'alpha')).toBe(
      'alpha → beta → alpha: agent alpha is already on the path (a cycle); delegation refused',
    );
    expect(delegationRefusal(runOf({ agent: 'beta', lineage, limits: { maxDepth: 1 } }), 'gamma')).toBe(
      'alpha → beta → gamma would be 2 levels deep, past limits.maxDepth 1; delegation refused',
    );
    expect(delegationRefusal(runOf({ limits: { maxDepth: 0 } }), 'beta')).toMatch(/^default → beta would be 1 levels deep/);
    // The grandchild's lineage keeps the root.
    expect(childLineage({ run: child, workflowId: 'w-call-call-0-0', callId: 'call-1-0', agent: 'gamma', request: 'r' })).toMatchObject({
      rootWorkflowId: 'w',
      parentWorkflowId: 'w-call-call-0-0',
      path: ['alpha', 'beta', 'gamma'],
      depth: 2,
    });
  });

  it('checks a lineage given in a turn’s input, naming the field', () => {
    const good = { rootWorkflowId: 'r', parentWorkflowId: 'p', parentCallId: 'c', path: ['a', 'b'], request: 'x', depth: 1 };
    expect(lineageProblem(good)).toBeUndefined();
    expect(lineageProblem([])).toBe('lineage must be an object');
    expect(lineageProblem({ ...good, parentCallId: '' })).toBe('lineage.parentCallId must be a non-empty string');
    expect(lineageProblem({ ...good, depth: 0 })).toBe('lineage.depth must be a whole number of at least 1');
    expect(lineageProblem({ ...good, path: ['a', 'B C'] })).toBe('lineage.path must be a list of agent names');
    expect(lineageProblem({ ...good, depth: 2 })).toBe('lineage.path must name 3 agents for depth 2, it names 2');
  });
});

describe("a child's share of its parent's limits", () => {
  const delegate = (callId: string): CheckedToolCall =>
    ({
      callId,
      tool: 'reader',
      args: {},
      argsDigest: 'x',
      policy: { effect: 'read' },
      delegate: { agent: 'reader', request: 'r' },
    }) as CheckedToolCall;

  it('splits the remaining steps (one kept for the parent), tool calls, error budget and tokens between the step’s delegate calls', () => {
    const run = runOf({ events: 2, errors: 1, budget: 1_150 });
    const calls = [delegate('call-1-0'), delegate('call-1-1')];
    const shares = childShares(run, 1, calls);
    // Steps: 10 - 2 used - 1 kept = 7, 3 each; tool calls: 20 - 2 - 2 = 16, 8 each; errors: 2 left, 1 each; tokens 1,000 left, 500 each.
    expect(shares.get('call-1-0')).toMatchObject({
      limits: { maxSteps: 3, maxToolCalls: 8, errorBudget: 1, maxDepth: 3 },
      tokenAllowance: 500,
    });
    expect(shares.get('call-1-1')).toEqual(shares.get('call-1-0'));
    const { limits } = shares.get('call-1-0') as { limits: { deadlineMs: number } };
    expect(limits.deadlineMs).toBeGreaterThan(3_500_000);
    expect(limits.deadlineMs).toBeLessThanOrEqual(3_600_000);
  });

  it('refuses a share with nothing left in it, naming what', () => {
    const shares = childShares(runOf({ limits: { maxSteps: 2 } }), 0, [delegate('call-0-0'), delegate('call-0-1')]);
    expect(shares.get('call-0-0')).toEqual({
      refused: "agent reader would get 0 steps of this turn's remaining limits (shared by 2 delegate calls); delegation refused",
    });
    // A refused call of the step takes no share.
    const refused = { ...delegate('call-0-1'), refusal: { code: 'forbidden', message: 'no' } } as CheckedToolCall;
    expect([...childShares(runOf({}), 0, [delegate('call-0-0'), refused]).keys()]).toEqual(['call-0-0']);
  });
});

describe("what a child's end gives its parent's call", () => {
  const result = (over: Partial<AgentTurnResult>): AgentTurnResult => ({
    taskId: 't',
    status: 'completed',
    modelInterruptions: [],
    steps: 2,
    toolCalls: [],
    usage: { inputTokens: 1, outputTokens: 1 },
    ...over,
  });
  const event = (code: AgentTurnResult['toolCalls'][number]['code'], executions: number) =>
    ({
      callId: 'call-0-0',
      tool: 'refund_order',
      code,
      executions,
      status: code ? 'error' : 'success',
    }) as AgentTurnResult['toolCalls'][number];

  it('gives the typed output, else the answer, as the result', () => {
    expect(outcomeOfChild('r', result({ output: { facts: [] }, answer: '{"facts":[]}' })).outcome.result).toEqual({
      status: 'success',
      data: { facts: [] },
    });
    expect(outcomeOfChild('r', result({ answer: 'Done.', toolCalls: [event(undefined, 1)] })).outcome).toMatchObject({
      result: { status: 'success', data: 'Done.' },
      executions: 1,
    });
  });

  it('makes the call outcome_unknown when a call of the child stayed unknown, even when it completed', () => {
    const ended = outcomeOfChild('refunder', result({ answer: 'Maybe.', toolCalls: [event('outcome_unknown', 1)] }));
    expect(ended.outcome.result).toMatchObject({ status: 'error', code: 'outcome_unknown', retryable: false });
    expect(ended.outcome.result.message).toMatch(/^agent refunder ended completed with the outcome of refund_order \(call-0-0\) unknown/);
  });

  it('gives a child that ended on a limit as a tool_failure naming how', () => {
    const ended = outcomeOfChild('reader', result({ status: 'step_limit', steps: 3, toolCalls: [event(undefined, 1)] }));
    expect(ended).toMatchObject({ status: 'step_limit', outcome: { executions: 1, result: { code: 'tool_failure', retryable: false } } });
    expect(ended.outcome.result.message).toBe('agent reader ended step_limit after 3 steps');
  });

  it('gives a failed or terminated child as outcome_unknown when it could write, tool_failure when it only reads', () => {
    const terminated = new ChildWorkflowFailure(
      'default',
      { workflowId: 'w', runId: 'r' },
      'agentTurn',
      RetryState.NON_RETRYABLE_FAILURE,
      new TerminatedFailure('Terminated'),
    );
    expect(outcomeOfFailure('refunder', 'irreversible_write', terminated)).toMatchObject({
      status: 'terminated',
      outcome: { executions: 0, result: { code: 'outcome_unknown', retryable: false } },
    });
    expect(outcomeOfFailure('writer', 'reversible_write', ApplicationFailure.create({ message: 'boom' }))).toMatchObject({
      status: 'failed',
      outcome: { result: { code: 'outcome_unknown' } },
    });
    expect(outcomeOfFailure('reader', 'read', terminated)).toMatchObject({
      status: 'terminated',
      outcome: { result: { code: 'tool_failure', message: "agent reader's turn terminated: Terminated" } },
    });
  });
});
