import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentTurnResult, ScriptStep } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { freePort } from '../../connection/ports';
import { createWorker } from '../../worker/create-worker';
import { startOtlpReceiver } from '../helpers/otlp-receiver';
import { startTimeSkippingServer } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { scripted } from '../helpers/turn-runner';

let env: TestWorkflowEnvironment;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let metricsPort: number;

beforeAll(async () => {
  [env, receiver, metricsPort] = await Promise.all([startTimeSkippingServer(), startOtlpReceiver(), freePort()]);
});

afterAll(async () => {
  await env?.teardown();
  await receiver?.close();
});

/** A tool name a model made up: long, unique, with personal data in it. */
function invented(turn: string, index: number): string {
  return `exfil_${turn}_${index}_jane.doe@example.com_${'x'.repeat(200)}`;
}

/** A script asking for `count` invented tools over four steps, then one known tool, then an answer. */
function inventing(turn: string, count: number): ScriptStep[] {
  const steps: ScriptStep[] = [];
  for (let step = 0; step < 4; step++) {
    const names = Array.from({ length: count / 4 }, (_, index) => invented(turn, step * (count / 4) + index));
    steps.push({ toolCalls: names.map((tool) => ({ tool, args: { q: 'x' } })) });
  }
  steps.push({ toolCalls: [{ tool: 'search_local_sources', args: { query: 'refund' } }] }, { text: 'done' });
  return steps;
}

/** The series /metrics serves (one per sample line), Tollgate's own only. */
function series(metrics: string): string[] {
  return metrics.split('\n').filter((line) => /^(tollgate_|gen_ai_client_)/.test(line));
}

describe('telemetry of tools no registry declares', () => {
  it('1,000 invented tool names: the same series as 4 invented names, and no invented name in a label, span name or attribute', async () => {
    const base = testConfig({
      telemetry: {
        prometheus: { host: '127.0.0.1', port: metricsPort },
        otlp: { endpoint: receiver.url, serviceName: 'tollgate-invented' },
      },
    });
    const config: TollgateConfig = { ...base, temporal: { ...base.temporal, taskQueue: `invented-${randomUUID()}` } };
    // Bundled by the worker itself, with the tracing interceptors (a prebuilt bundle would need them built in).
    const worker = await createWorker({ config, connection: env.nativeConnection });
    const limits = { maxSteps: 10, maxToolCalls: 2_000, errorBudget: 2_000 };
    const run = (turn: string, count: number) =>
      env.client.workflow.execute('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId: `task-${turn}`, prompt: 'go', model: scripted(inventing(turn, count)), limits }],
      }) as Promise<AgentTurnResult>;
    const { small, large, few, many } = await worker.runUntil(async () => {
      const small = await run('small', 4);
      const few = series(await (await fetch(`${worker.metricsUrl}`)).text());
      const large = await run('large', 1_000);
      const many = series(await (await fetch(`${worker.metricsUrl}`)).text());
      return { small, large, few, many };
    });
    // Every invented call was refused and counted, none ran.
    expect(small.status).toBe('completed');
    expect(large.status).toBe('completed');
    const refused = large.toolCalls.filter((event) => event.code === 'unknown_tool');
    expect(refused).toHaveLength(1_000);
    expect(refused.every((event) => event.executions === 0)).toBe(true);

    // The series are the same ones whether 4 or 1,000 names were invented; only their counts grew.
    const names = (lines: string[]) => lines.map((line) => line.slice(0, line.lastIndexOf(' ')));
    expect(names(many)).toEqual(names(few));
    expect(
      many.some((line) =>
        line.startsWith('tollgate_tool_calls_total{tool="unknown",effect="unknown",status="error",code="unknown_tool",agent="default"}'),
      ),
    ).toBe(true);
    const unknownCalls = many.find((line) => line.startsWith('tollgate_tool_calls_total{tool="unknown"'))!;
    expect(Number(unknownCalls.split(' ').at(-1))).toBe(1_004);
    expect(many.some((line) => line.startsWith('tollgate_tool_calls_total{tool="search_local_sources"'))).toBe(true);
    const metricsText = many.join('\n');
    expect(metricsText).not.toContain('exfil_');
    expect(metricsText).not.toContain('jane.doe');

    // Spans: the worker flushed its exporter when it stopped. No invented name anywhere in them.
    const spansText = JSON.stringify(receiver.spans);
    expect(receiver.spans.filter((span) => span.name === 'execute_tool unknown')).toHaveLength(1_004);
    expect(receiver.spans.filter((span) => span.name === 'execute_tool search_local_sources')).toHaveLength(2);
    expect(spansText).not.toContain('exfil_');
    expect(spansText).not.toContain('jane.doe');
  });
});
