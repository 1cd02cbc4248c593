// Handoffs without a server: how an agent declares them (code and config), what the registry refuses
// at worker start, how the model step checks a `transfer_to_<agent>` call, what the turn's settings
// record, and the agent label of the metrics (bounded to the agents a worker declares).
import { describe, expect, it } from 'vitest';
import { agentsFromConfig } from '../../agents/agent-config';
import { createAgentRegistry } from '../../agents/agent-registry';
import { defineAgent } from '../../agents/define-agent';
import { checkHandoffCall, handoffTargets, handoffTools } from '../../activities/models/handoff-calls';
import { createTurnSettings } from '../../activities/turn-settings';
import { handoffTargetOf, handoffToolName } from '../../common/handoff-names';
import { createRedactor } from '../../hardened/redact';
import { TollgateMetrics } from '../../worker/telemetry/metrics';
import { testConfig } from '../helpers/test-config';

const billing = defineAgent({ name: 'billing', description: 'Refunds orders.', instructions: 'You refund.', tools: ['refund_order'] });
const triage = defineAgent({ name: 'triage', instructions: 'You sort.', tools: ['lookup_order'], handoffs: [billing, 'support'] });
const support = defineAgent({ name: 'support', instructions: 'You answer.' });
const toolNames = ['lookup_order', 'refund_order'];
const redactor = createRedactor();

describe('declaring handoffs', () => {
  it('takes agents or names, recorded as names; the digest covers them, and leaves agents without any as they were', () => {
    expect(triage.handoffs).toEqual(['billing', 'support']);
    const other = defineAgent({ name: 'triage', instructions: 'You sort.', tools: ['lookup_order'], handoffs: ['billing'] });
    expect(other.digest).not.toBe(triage.digest);
    const none = defineAgent({ name: 'triage', instructions: 'You sort.', tools: ['lookup_order'] });
    expect(none.handoffs).toBeUndefined();
    // The digest an agent without handoffs always had (before handoffs existed): its description has no handoffs key.
    expect(defineAgent({ name: 'triage', instructions: 'You sort.', tools: ['lookup_order'], handoffs: undefined }).digest).toBe(
      none.digest,
    );
  });

  it('refuses itself, a name twice and what is not an agent name, naming the agent and the field', () => {
    expect(() => defineAgent({ name: 'triage', handoffs: ['triage'] })).toThrow(
      'defineAgent(triage).handoffs: names the agent itself (triage)',
    );
    expect(() => defineAgent({ name: 'triage', handoffs: ['billing', billing] })).toThrow(
      'defineAgent(triage).handoffs: names billing twice',
    );
    expect(() => defineAgent({ name: 'triage', handoffs: ['Billing Desk'] })).toThrow(
      'defineAgent(triage).handoffs: holds "Billing Desk", not an agent or an agent name',
    );
  });

  it('reads agents.<name>.handoffs from the config, and names a bad entry', () => {
    const config = testConfig({
      agents: { triage: { instructions: 'Sort.', handoffs: ['billing'] }, billing: { instructions: 'Refund.' } },
    });
    const [first] = agentsFromConfig(config.agents);
    expect(first).toMatchObject({ name: 'triage', handoffs: ['billing'] });
    expect(() => testConfig({ agents: { triage: { handoffs: ['No Such'] } } })).toThrow(/agents\.triage\.handoffs\.0/);
  });
});

describe('the registry at worker start', () => {
  it('refuses a handoff to an agent the worker does not declare, naming both', () => {
    expect(() => createAgentRegistry({ agents: [triage, billing], toolNames })).toThrow(
      'agent triage: handoff target "support" is not an agent of this worker (agents: triage, billing)',
    );
  });

  it('refuses a handoff tool whose name a served tool has, naming both', () => {
    expect(() => createAgentRegistry({ agents: [triage, billing, support], toolNames: [...toolNames, 'transfer_to_support'] })).toThrow(
      'agent triage: its handoff to support is offered as "transfer_to_support", which is also the name of a tool the worker serves',
    );
  });

  it("records the targets' digests in the turn's settings, for the switch to check", async () => {
    const agents = createAgentRegistry({ agents: [triage, billing, support], toolNames });
    const settings = await createTurnSettings(testConfig(), {}, agents)({ agent: 'triage' });
    expect(settings.agent!.handoffs).toEqual([
      { name: 'billing', digest: billing.digest },
      { name: 'support', digest: support.digest },
    ]);
    expect((await createTurnSettings(testConfig(), {}, agents)({ agent: 'billing' })).agent!.handoffs).toBeUndefined();
  });
});

describe('a handoff call in the model step', () => {
  const agents = createAgentRegistry({ agents: [triage, billing, support], toolNames });

  it('offers one transfer_to_<agent> tool per target, with an optional reason', () => {
    const offered = handoffTools(handoffTargets(triage, agents));
    expect(offered.map((tool) => tool.name)).toEqual(['transfer_to_billing', 'transfer_to_support']);
    expect(offered[0].description).toContain('Refunds orders.');
    expect(offered[0].inputSchema).toMatchObject({ type: 'object', properties: { reason: { type: 'string' } } });
    expect(handoffTargets(billing, agents)).toEqual([]);
    expect(handoffTargets(undefined, agents)).toEqual([]);
  });

  it('accepts a listed target, refuses an agent not listed (forbidden) and bad arguments, leaves any other name to the tools', () => {
    const check = (tool: string, args: unknown, agent = triage) =>
      checkHandoffCall({ callId: 'call-0-0', tool, args, agent, agents, redactor });
    expect(check('transfer_to_billing', { reason: 'a refund' })).toMatchObject({
      policy: { effect: 'read' },
      handoff: { to: 'billing', reason: 'a refund' },
    });
    expect(check('transfer_to_billing', {})!.refusal).toBeUndefined();
    expect(check('transfer_to_triage', {}, billing)!.refusal).toEqual({
      code: 'forbidden',
      message: 'agent billing may not hand the turn to triage (its handoffs: none)',
    });
    expect(checkHandoffCall({ callId: 'c', tool: 'transfer_to_billing', args: {}, agent: undefined, agents, redactor })!.refusal).toEqual({
      code: 'forbidden',
      message: 'the default agent may not hand the turn to billing (its handoffs: none)',
    });
    expect(check('transfer_to_billing', { reason: 7 })!.refusal).toMatchObject({ code: 'invalid_arguments', message: /^reason: / });
    expect(check('transfer_to_billing', { reason: 'x', extra: 1 })!.refusal).toMatchObject({ code: 'invalid_arguments' });
    expect(check('transfer_to_billing', { reason: 'x'.repeat(1001) })!.refusal).toMatchObject({ code: 'invalid_arguments' });
    // Not an agent of this worker, or not a handoff's name at all: checked as a tool (unknown_tool there).
    expect(check('transfer_to_sales', {})).toBeUndefined();
    expect(check('lookup_order', { orderId: '7' })).toBeUndefined();
  });

  it('names handoff tools one way on every side', () => {
    expect(handoffToolName('billing')).toBe('transfer_to_billing');
    expect(handoffTargetOf('transfer_to_billing')).toBe('billing');
    expect(handoffTargetOf('transfer_to_')).toBeUndefined();
    expect(handoffTargetOf('lookup_order')).toBeUndefined();
  });
});

describe('the agent label of the metrics', () => {
  it('counts turns and calls by agent: declared agents and default by name, any other name as unknown', async () => {
    const metrics = new TollgateMetrics();
    metrics.knowTools([{ name: 'lookup_order', effect: 'read' }]);
    metrics.knowAgents(['triage', 'billing']);
    metrics.turnFinished('completed', 'billing');
    metrics.turnFinished('completed', 'default');
    metrics.turnFinished('completed');
    metrics.turnFinished('completed', 'x'.repeat(60));
    const call = (tool: string, agent?: string) =>
      metrics.toolCallFinished({ tool, effect: 'read', status: 'success', durationMs: 1, ...(agent ? { agent } : {}) });
    call('lookup_order', 'triage');
    call('transfer_to_billing', 'triage');
    call('lookup_order', 'sales');
    call('transfer_to_sales', 'billing');
    const samples = async (name: string) =>
      (await metrics.registry.getSingleMetricAsString(name)).split('\n').filter((line) => line.startsWith(`${name}{`));
    expect(await samples('tollgate_turns_total')).toEqual([
      'tollgate_turns_total{status="completed",agent="billing"} 1',
      'tollgate_turns_total{status="completed",agent="default"} 2',
      'tollgate_turns_total{status="completed",agent="unknown"} 1',
    ]);
    expect(await samples('tollgate_tool_calls_total')).toEqual([
      'tollgate_tool_calls_total{tool="lookup_order",effect="read",status="success",code="",agent="triage"} 1',
      'tollgate_tool_calls_total{tool="transfer_to_billing",effect="read",status="success",code="",agent="triage"} 1',
      'tollgate_tool_calls_total{tool="lookup_order",effect="read",status="success",code="",agent="unknown"} 1',
      'tollgate_tool_calls_total{tool="unknown",effect="read",status="success",code="",agent="billing"} 1',
    ]);
  });
});
