// defineAgent, the config's agents section and the registry a worker serves them from: malformed
// definitions refused naming the agent and the field, the digest, the output checks, and the
// agent's view of the turn's settings.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentsFromConfig } from '../../agents/agent-config';
import { createAgentRegistry } from '../../agents/agent-registry';
import { defineAgent } from '../../agents/define-agent';
import { agentStep, checkAnswer } from '../../activities/models/agent-step';
import { createTurnSettings } from '../../activities/turn-settings';
import { narrowTools } from '../../common/contract/agent';
import { ConfigError } from '../../config/load-config';
import { defineTool } from '../../tools/define-tool';
import { testConfig } from '../helpers/test-config';
import { describeApproval } from '../../client/follow-turn';
import type { PendingApproval } from '../../common/contract/decisions';
import { renderDetails } from '../../workflows/decisions/details';
import { startingState } from '../../workflows/turn/turn-run';

const lookup = defineTool({
  name: 'lookup_order',
  description: 'Looks an order up.',
  input: z.strictObject({ orderId: z.string() }),
  effect: 'read',
  handler: () => 'ok',
});

const spec = {
  name: 'support',
  instructions: 'You are the support desk.',
  tools: [lookup, 'get_document'],
  output: z.object({ refunded: z.boolean(), message: z.string() }),
};

describe('defineAgent', () => {
  it('keeps tools by name and gives a digest that changes with any declared field', () => {
    const agent = defineAgent(spec);
    expect(agent.tools).toEqual(['lookup_order', 'get_document']);
    expect(agent.outputRetries).toBe(2);
    expect(agent.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(defineAgent(spec).digest).toBe(agent.digest);
    // The order tools are listed in does not change what the agent may call.
    expect(defineAgent({ ...spec, tools: ['get_document', lookup] }).digest).toBe(agent.digest);
    const variants = [
      { instructions: 'You refund everything.' },
      { tools: [lookup] },
      { output: z.object({ refunded: z.boolean() }) },
      { modelSettings: { temperature: 0.3 } },
      { limits: { maxSteps: 3 } },
      { outputRetries: 0 },
      { model: 'other' },
      { approvals: { groups: { lookup_order: ['ada'] } } },
    ];
    for (const variant of variants) expect(defineAgent({ ...spec, ...variant }).digest).not.toBe(agent.digest);
  });

  it('declares an instructions function by its source text', () => {
    const one = defineAgent({ name: 'a', instructions: (input) => `Ticket ${input.taskId}` });
    const other = defineAgent({ name: 'a', instructions: (input) => `Case ${input.taskId}` });
    expect(one.digest).not.toBe(other.digest);
  });

  it.each([
    [{ name: 'Support' }, /defineAgent\(Support\): name "Support" must start with a lowercase letter/],
    [{ name: 'a', modelSettings: { temprature: 1 } }, /defineAgent\(a\)\.modelSettings\.temprature: is not a model setting/],
    [{ name: 'a', modelSettings: { maxOutputTokens: 0 } }, /modelSettings\.maxOutputTokens: must be a whole number of at least 1/],
    [{ name: 'a', modelSettings: { stopSequences: 'END' } }, /modelSettings\.stopSequences: must be a list of strings/],
    [{ name: 'a', modelSettings: { providerOptions: { tollgate: {} } } }, /providerOptions\.tollgate: is Tollgate’s own namespace/],
    [{ name: 'a', limits: { maxStep: 3 } }, /defineAgent\(a\)\.limits\.maxStep: is not a limit/],
    [{ name: 'a', tools: ['x', 'x'] }, /defineAgent\(a\)\.tools: names x twice/],
    [{ name: 'a', outputRetries: -1 }, /outputRetries: must be a whole number of at least 0/],
    [{ name: 'a', output: { type: 'object' } }, /defineAgent\(a\)\.output: must be a zod schema/],
    [{ name: 'a', instructions: 42 }, /defineAgent\(a\)\.instructions: must be a string or a function/],
    [
      { name: 'a', approvals: { groups: { refund_order: 'finance' } } },
      /defineAgent\(a\)\.approvals\.groups\.refund_order: must be a list of approver key names/,
    ],
  ])('refuses %j, naming the agent and the field', (bad, message) => {
    expect(() => defineAgent(bad as never)).toThrow(message);
  });
});

describe('an agent’s typed output', () => {
  const agent = defineAgent(spec);
  it('parses the answer as JSON, or the one fenced block it is', () => {
    expect(checkAnswer(agent, '{"refunded":true,"message":"done"}')).toEqual({ valid: true, value: { refunded: true, message: 'done' } });
    expect(checkAnswer(agent, '```json\n{"refunded":false,"message":"no"}\n```')).toMatchObject({ valid: true });
  });

  it('says what does not fit, one line per problem', () => {
    expect(checkAnswer(agent, 'Refunded!')).toMatchObject({ valid: false, problems: expect.stringMatching(/^the answer is not JSON/) });
    expect(checkAnswer(agent, '')).toMatchObject({ valid: false, problems: 'the answer is empty; it must be one JSON value' });
    const checked = checkAnswer(agent, '{"refunded":"yes"}');
    expect(checked.valid).toBe(false);
    expect(!checked.valid && checked.problems.split('\n')).toEqual([
      expect.stringMatching(/^refunded: .*boolean/),
      expect.stringMatching(/^message: /),
    ]);
  });
});

describe('the agents section of the config', () => {
  it('becomes definitions, the JSON Schema output checked on the hardened validator', () => {
    const config = testConfig({
      agents: { triage: { instructions: 'Sort.', tools: ['get_document'], output: { type: 'object', required: ['queue'] } } },
    });
    const [triage] = agentsFromConfig(config.agents);
    expect(triage).toMatchObject({ name: 'triage', tools: ['get_document'], outputRetries: 2 });
    expect(checkAnswer(triage, '{"queue":"billing"}')).toEqual({ valid: true, value: { queue: 'billing' } });
    expect(checkAnswer(triage, '{}')).toMatchObject({
      valid: false,
      problems: expect.stringMatching(/^queue: must have required property/),
    });
  });

  it.each([
    [{ Triage: {} }, /agents\.Triage: an agent name starts with a lowercase letter/],
    [{ triage: { instruction: 'x' } }, /unknown key "agents\.triage\.instruction"/],
    [{ triage: { modelSettings: { temperature: 'hot' } } }, /agents\.triage\.modelSettings\.temperature: /],
    [{ triage: { limits: { maxSteps: 0 } } }, /agents\.triage\.limits\.maxSteps: /],
    [{ triage: { output: { type: 'objekt' } } }, /agents\.triage\.output: the schema does not compile/],
    [{ triage: { approvals: { rules: [{ name: 'r', tool: 'x', decision: 'deny' }] } } }, /agents\.triage\.approvals\.rules\.0\.reason/],
  ])('refuses %j with an error naming the key', (agents, message) => {
    expect(() => testConfig({ agents })).toThrow(ConfigError);
    expect(() => testConfig({ agents })).toThrow(message);
  });
});

describe('the agent registry', () => {
  const agent = defineAgent(spec);
  it('stops the worker on an agent declared twice, a tool it does not serve, or a model it does not know', () => {
    const toolNames = ['lookup_order', 'get_document'];
    expect(() => createAgentRegistry({ agents: [agent, agent], toolNames })).toThrow(/agent "support" is declared twice/);
    expect(() => createAgentRegistry({ agents: [agent], toolNames: ['lookup_order'] })).toThrow(
      /agent support: tool "get_document" is not served by this worker \(served: lookup_order\)/,
    );
    expect(() => createAgentRegistry({ agents: [defineAgent({ ...spec, model: 'big' })], toolNames, modelNames: ['default'] })).toThrow(
      /agent support: model "big" is not one of the worker's models \(default\)/,
    );
  });

  it('names its rules after the agent', () => {
    const ruled = defineAgent({ ...spec, approvals: { rules: [{ name: 'small', tool: 'lookup_order', decision: 'approve' }] } });
    const registry = createAgentRegistry({ agents: [ruled], toolNames: ['lookup_order', 'get_document'] });
    expect(registry.rules('support').map((rule) => rule.name)).toEqual(['support.small']);
    expect(registry.rules('other')).toEqual([]);
  });

  it('gives a turn the agent as data, or the names it knows', async () => {
    const registry = createAgentRegistry({ agents: [agent], toolNames: ['lookup_order', 'get_document'] });
    const turnSettings = createTurnSettings(testConfig(), {}, registry);
    expect((await turnSettings()).agent).toBeUndefined();
    expect((await turnSettings({ agent: 'support' })).agent).toEqual({
      name: 'support',
      digest: agent.digest,
      tools: ['lookup_order', 'get_document'],
      instructions: 'text',
      output: true,
      outputRetries: 2,
    });
    expect((await turnSettings({ agent: 'sales' })).unknownAgent).toEqual({ name: 'sales', known: ['support'] });
  });

  it('refuses a step of an agent it declares differently, and narrows the turn’s tools to the agent’s', () => {
    const registry = createAgentRegistry({ agents: [agent], toolNames: ['lookup_order', 'get_document'] });
    expect(() => agentStep(registry, { agent: { name: 'support', digest: 'f'.repeat(64) } })).toThrow(/declares agent support differently/);
    expect(() => agentStep(registry, { agent: { name: 'sales', digest: agent.digest } })).toThrow(/not declared on this worker/);
    const step = agentStep(registry, { agent: { name: 'support', digest: agent.digest }, allowedTools: ['get_document', 'shell'] })!;
    expect(step.allowedTools).toEqual(['get_document']);
    expect(step.system.startsWith('You are the support desk.\n\nA tool result has a status')).toBe(true);
    expect(narrowTools(undefined, ['a'])).toEqual(['a']);
    expect(narrowTools(['a', 'b'], undefined)).toEqual(['a', 'b']);
  });
});

describe('what a person deciding sees of the agent', () => {
  const agent = { name: 'support', digest: 'ab'.repeat(32) };
  const pending = {
    callId: 'call-1-0',
    tool: 'refund_order',
    args: { orderId: 'A-1001', cents: 4999 },
    argsDigest: 'cd'.repeat(32),
    requestedAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-02T00:00:00.000Z',
    round: 1,
    agent,
  } as PendingApproval;

  it('is named in the terminal’s approval (tollgate inbox, approve, the live view)', () => {
    expect(describeApproval(pending).text.split('\n')[0]).toBe(
      'Approval needed for call-1-0: refund_order, asked by agent support (expires 2026-01-02T00:00:00.000Z)',
    );
    expect(describeApproval({ ...pending, agent: undefined }).text).not.toContain('agent');
  });

  it('is named in the Web UI’s details, with the start of its digest', () => {
    const state = { ...startingState('task-1'), agent, pendingApprovals: [pending] };
    expect(renderDetails(state).split('\n')[1]).toBe(`**Agent** support · definition \`${'ab'.repeat(6)}\``);
    expect(renderDetails(startingState('task-1'))).not.toContain('**Agent**');
  });
});
