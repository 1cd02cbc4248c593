// Telemetry of a tree of turns, beside otlp-traces.test.ts: a worker serving agents with tracing and
// /metrics runs a lead agent that delegates to a researcher (a child turn) and then hands off to a
// closer. Each turn's span is `invoke_agent <agent>`, the child's nests under the parent's call span
// (the OpenTelemetry interceptors carry the context in the child's start headers), and the
// Prometheus counters carry the agent: of the turn that ended, and of the turn that made a call.
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../agents/define-agent';
import { freePort } from '../../connection/ports';
import type { AgentTurnResult } from '../../common/contract/turn';
import { defineTool } from '../../tools/define-tool';
import { createWorker } from '../../worker/create-worker';
import { openaiStream, startFakeProvider, type FakeProvider, type FakeReply } from '../helpers/fake-provider';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';
import { startTimeSkippingServer } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';

let env: TestWorkflowEnvironment;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let provider: FakeProvider;

beforeAll(async () => {
  [env, receiver, provider] = await Promise.all([startTimeSkippingServer(), startOtlpReceiver(), startFakeProvider()]);
});

afterAll(async () => {
  await env?.teardown();
  await receiver?.close();
  await provider?.close();
});

const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Looks an order up.',
  input: z.strictObject({ orderId: z.string() }),
  effect: 'read',
  handler: ({ orderId }) => ({ orderId, state: 'delivered' }),
});
const researcher = defineAgent({ name: 'researcher', instructions: 'Find facts.', tools: [lookupOrder] });
const closer = defineAgent({ name: 'closer', instructions: 'Answer the customer.', tools: [] });
const lead = defineAgent({ name: 'lead', instructions: 'Ask, then hand the answer on.', tools: [researcher], handoffs: [closer] });

const text = (answer: string): FakeReply => ({ kind: 'stream', events: openaiStream.text([answer]) });
const toolCall = (tool: string, args: unknown): FakeReply => ({
  kind: 'stream',
  events: openaiStream.toolCall(tool, [JSON.stringify(args)]),
});

function ancestors(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const found: ReceivedSpan[] = [];
  for (
    let parent = spans.find((s) => s.spanId === span.parentSpanId);
    parent;
    parent = spans.find((s) => s.spanId === parent!.parentSpanId)
  )
    found.push(parent);
  return found;
}

describe('telemetry of a tree of turns', () => {
  it('names each turn span after its agent, nests the child under the call span, and counts turns and calls by agent', async () => {
    const base = testConfig({
      telemetry: {
        otlp: { endpoint: receiver.url, serviceName: 'tollgate-tree' },
        prometheus: { host: '127.0.0.1', port: await freePort() },
      },
      model: { default: 'fake', models: { fake: { provider: 'openai-compatible', model: 'gpt-test', baseURL: provider.baseURL } } },
    });
    const config = { ...base, temporal: { ...base.temporal, taskQueue: `tree-telemetry-${randomUUID()}` } };
    // One turn asks at a time (the parent waits for its child), so one queue answers them in order.
    provider.enqueue(
      toolCall('researcher', { request: 'Where is order 7?' }),
      toolCall('lookup_order', { orderId: '7' }),
      text('Order 7 was delivered.'),
      toolCall('transfer_to_closer', { reason: 'the facts are in' }),
      text('Your order was delivered.'),
    );
    const worker = await createWorker({
      config,
      connection: env.nativeConnection,
      tools: [lookupOrder],
      agents: [lead, researcher, closer],
    });
    const taskId = `task-${randomUUID()}`;
    const workflowId = `tree-${randomUUID()}`;
    let metrics = '';
    const result: AgentTurnResult = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId, prompt: 'Where is my order 7?', agent: 'lead' }],
      });
      const ended = await handle.result();
      // The sink counts after the activation that ended the turn: read /metrics until it has.
      for (let tries = 0; tries < 100 && !metrics.includes('agent="closer"'); tries++) {
        metrics = await (await fetch(`${worker.metricsUrl}`)).text();
        if (!metrics.includes('tollgate_turns_total{status="completed",agent="closer"}'))
          await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return ended;
    });
    expect(result).toMatchObject({ status: 'completed', agent: { name: 'closer' }, handoffs: [{ from: 'lead', to: 'closer', step: 1 }] });

    // Spans: the worker flushed its exporter when it stopped.
    const root = receiver.spans.find((span) => span.name === 'invoke_agent lead' && span.attributes['gen_ai.conversation.id'] === taskId);
    expect(root, 'the root turn span').toBeDefined();
    const spans = receiver.spans.filter((span) => span.traceId === root!.traceId);
    expect(root!.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'lead' });
    const call = spans.find((span) => span.name === 'execute_tool researcher')!;
    expect(call.parentSpanId).toBe(root!.spanId);
    const child = spans.find((span) => span.name === 'invoke_agent researcher');
    expect(child, "the child's turn span, in the root's trace").toBeDefined();
    expect(child!.attributes).toMatchObject({ 'gen_ai.agent.name': 'researcher', 'tollgate.turn.status': 'completed' });
    const above = ancestors(spans, child!);
    expect(above.map((span) => span.spanId)).toContain(call.spanId);
    // Between the call and the child's turn: the child workflow's start and run, nothing of another turn.
    expect(above.slice(0, above.indexOf(call)).map((span) => span.name)).toEqual(['RunWorkflow:agentTurn', 'StartChildWorkflow:agentTurn']);
    // The child's own call nests under the child's turn span.
    const lookup = spans.find((span) => span.name === 'execute_tool lookup_order')!;
    expect(lookup.parentSpanId).toBe(child!.spanId);
    const handoff = spans.find((span) => span.name === 'execute_tool transfer_to_closer')!;
    expect(handoff.parentSpanId).toBe(root!.spanId);

    // Metrics: the turn that ended (the child as researcher, the root as closer after its handoff), and who made each call.
    const sample = (line: string) => metrics.split('\n').find((candidate) => candidate.startsWith(line));
    expect(sample('tollgate_turns_total{status="completed",agent="researcher"} 1')).toBeDefined();
    expect(sample('tollgate_turns_total{status="completed",agent="closer"} 1')).toBeDefined();
    expect(sample('tollgate_turns_total{status="completed",agent="lead"}')).toBeUndefined();
    expect(
      sample('tollgate_tool_calls_total{tool="lookup_order",effect="read",status="success",code="",agent="researcher"} 1'),
    ).toBeDefined();
    expect(sample('tollgate_tool_calls_total{tool="researcher",effect="read",status="success",code="",agent="lead"} 1')).toBeDefined();
    expect(
      sample('tollgate_tool_calls_total{tool="transfer_to_closer",effect="read",status="success",code="",agent="lead"} 1'),
    ).toBeDefined();
  });
});
