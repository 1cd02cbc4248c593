import { randomUUID } from 'node:crypto';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentTurnResult } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { createWorker, WORKFLOWS_PATH } from '../../worker/create-worker';
import { createTracing, TRACING_WORKFLOW_MODULES } from '../../worker/telemetry/tracing';
import { TollgateMetrics } from '../../worker/telemetry/metrics';
import { startTimeSkippingServer } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { scripted } from '../helpers/turn-runner';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';

let env: TestWorkflowEnvironment;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;

beforeAll(async () => {
  [env, receiver] = await Promise.all([startTimeSkippingServer(), startOtlpReceiver()]);
});

afterAll(async () => {
  await env?.teardown();
  await receiver?.close();
});

function tracedConfig(extra: Record<string, unknown> = {}): TollgateConfig {
  const base = testConfig({ telemetry: { otlp: { endpoint: receiver.url, serviceName: 'tollgate-test' }, ...extra } });
  return { ...base, temporal: { ...base.temporal, taskQueue: `traces-${randomUUID()}` } };
}

/** The one span of that name (the test fails when there are none or several). */
function only(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((span) => span.name === name);
  expect(
    found.map((span) => span.name),
    `spans named ${name}`,
  ).toEqual([name]);
  return found[0];
}

function parentOf(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan | undefined {
  return spans.find((candidate) => candidate.spanId === span.parentSpanId);
}

describe('OpenTelemetry traces of a turn', () => {
  it('exports the span tree of a turn (invoke_agent tollgate over chat and execute_tool spans), nothing again on replay', async () => {
    const config = tracedConfig();
    const taskId = `task-${randomUUID()}`;
    const worker = await createWorker({ config, connection: env.nativeConnection });
    const workflowId = `turn-${randomUUID()}`;
    const result: AgentTurnResult = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [
          {
            taskId,
            prompt: 'find the brief and save a draft',
            model: scripted([
              { toolCalls: [{ tool: 'search_local_sources', args: { query: 'brief' } }] },
              { toolCalls: [{ tool: 'save_draft', args: { path: 'brief.md', content: 'draft' } }] },
              { text: 'done' },
            ]),
          },
        ],
      });
      return handle.result();
    });
    expect(result.status).toBe('completed');
    // The worker flushed its exporter when it stopped.
    const spans = receiver.spans.filter((span) => span.traceId === receiver.spans.find((s) => s.name === 'invoke_agent tollgate')?.traceId);
    expect(new Set(spans.map((span) => span.spanId)).size, 'no span exported twice').toBe(spans.length);
    expect(spans.every((span) => span.serviceName === 'tollgate-test')).toBe(true);

    const turn = only(spans, 'invoke_agent tollgate');
    expect(turn.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'tollgate',
      'gen_ai.conversation.id': taskId,
      'tollgate.turn.status': 'completed',
    });
    expect(parentOf(spans, turn)?.name).toBe('RunWorkflow:agentTurn');

    const chats = spans.filter((span) => span.name === 'chat scripted');
    expect(chats).toHaveLength(3);
    for (const chat of chats) {
      const run = parentOf(spans, chat)!;
      expect(run.name).toBe('RunActivity:modelStep');
      expect(parentOf(spans, run)?.name).toBe('StartActivity:modelStep');
      expect(parentOf(spans, parentOf(spans, run)!)?.spanId).toBe(turn.spanId);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'tollgate',
        'gen_ai.request.model': 'scripted',
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
      });
      // gen_ai.system is the conventions' old name of the provider.
      expect(chat.attributes['gen_ai.system']).toBeUndefined();
      // Content is off unless the config says so.
      expect(chat.attributes['gen_ai.input.messages']).toBeUndefined();
      expect(chat.attributes['gen_ai.output.messages']).toBeUndefined();
    }
    expect(chats.map((chat) => chat.attributes['gen_ai.response.finish_reasons'])).toEqual([['tool_call'], ['tool_call'], ['stop']]);

    const search = only(spans, 'execute_tool search_local_sources');
    expect(parentOf(spans, search)?.spanId).toBe(turn.spanId);
    expect(search.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'search_local_sources',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.call.id': 'call-0-0',
      'tollgate.effect': 'read',
      'tollgate.status': 'success',
      'tollgate.executions': 1,
    });
    const draft = only(spans, 'execute_tool save_draft');
    expect(draft.attributes).toMatchObject({
      'gen_ai.tool.call.id': 'call-1-0',
      'tollgate.effect': 'reversible_write',
      'tollgate.status': 'success',
      'tollgate.executions': 1,
      'tollgate.status_lookup': 'not_applied',
      'tollgate.idempotency': 'claimed',
    });
    const draftActivities = spans.filter((span) => parentOf(spans, span)?.spanId === draft.spanId).map((span) => span.name);
    expect(draftActivities.sort()).toEqual(['StartActivity:lookupStatus', 'StartActivity:runTool']);

    // Replaying the turn's history with the same tracing exports nothing new.
    const before = receiver.spans.length;
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const replayTracing = createTracing(config)!;
    await Worker.runReplayHistory(
      { workflowsPath: WORKFLOWS_PATH, plugins: [replayTracing.plugin], sinks: new TollgateMetrics().sinks() },
      history,
      workflowId,
    );
    await replayTracing.shutdown();
    expect(receiver.spans.length).toBe(before);
  });

  it('records prompts and texts only with telemetry.recordContent, and then redacted', async () => {
    const config = tracedConfig({ recordContent: true });
    const worker = await createWorker({ config, connection: env.nativeConnection });
    const taskId = `task-${randomUUID()}`;
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId, prompt: 'use key sk-abcdefghijklmnopqrstuv please', model: scripted([{ text: 'answer' }]) }],
      });
      return handle.result();
    });
    const turn = receiver.spans.find(
      (span) => span.name === 'invoke_agent tollgate' && span.attributes['gen_ai.conversation.id'] === taskId,
    )!;
    const chat = receiver.spans.find((span) => span.traceId === turn.traceId && span.name === 'chat scripted')!;
    const input = String(chat.attributes['gen_ai.input.messages']);
    expect(input).toContain('use key');
    expect(input).toContain('[redacted]');
    expect(input).not.toContain('sk-abcdefghijklmnopqrstuv');
    // The conventions' message schemas: roles and typed parts, the output with its finish reason.
    expect(JSON.parse(input)).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'use key [redacted] please' }] }]);
    expect(JSON.parse(String(chat.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'answer' }], finish_reason: 'stop' },
    ]);
  });

  it('traces the workflow of a worker given a prebuilt bundle built with TRACING_WORKFLOW_MODULES', async () => {
    const config = tracedConfig();
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      workflowInterceptorModules: TRACING_WORKFLOW_MODULES,
      logger: new DefaultLogger('WARN'),
    });
    const worker = await createWorker({ config, connection: env.nativeConnection, workflowBundle });
    const taskId = `task-${randomUUID()}`;
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId, prompt: 'say done', model: scripted([{ text: 'done' }]) }],
      });
      return handle.result();
    });
    const turn = receiver.spans.find(
      (span) => span.name === 'invoke_agent tollgate' && span.attributes['gen_ai.conversation.id'] === taskId,
    );
    expect(turn, 'the workflow span of the turn').toBeDefined();
    const spans = receiver.spans.filter((span) => span.traceId === turn!.traceId);
    expect(parentOf(spans, turn!)?.name).toBe('RunWorkflow:agentTurn');
    const chat = only(spans, 'chat scripted');
    expect(parentOf(spans, parentOf(spans, parentOf(spans, chat)!)!)?.spanId).toBe(turn!.spanId);
  });
});
