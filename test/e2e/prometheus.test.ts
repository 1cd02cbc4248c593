import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentTurnResult, ScriptStep } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { freePort } from '../../connection/ports';
import { builtInTools } from '../../tools/built-in';
import { defineTool } from '../../tools/define-tool';
import { ToolOutcome } from '../../tools/tool-outcome';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { installRuntimeMetrics } from '../../worker/telemetry/runtime-metrics';
import { approvalSignal } from '../../workflows/messages';
import { bundleWorkflows, startTimeSkippingServer } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { scripted, waitForState } from '../helpers/turn-runner';
import { roundOf } from '../../testing/round-of';

const PROMETHEUS = '/usr/bin/prometheus';

let env: TestWorkflowEnvironment;
let workflowBundle: WorkflowBundleWithSourceMap;
let prometheus: ChildProcess | undefined;
let prometheusUrl: string;
let coreMetricsUrl: string | undefined;
const workerPorts: number[] = [];
const taskQueue = `metrics-${randomUUID()}`;

/** A config whose worker serves /metrics on the given port. */
// The known set includes a write whose outcome stays unknown: nobody resolves it here, so it is reported at once.
const shared = testConfig({ outcomes: { onUnknown: 'report' } });

/** The config of a worker serving metrics on `port`; a restarted worker opens the same store, as in service. */
function configOn(port: number): TollgateConfig {
  return {
    ...shared,
    telemetry: { ...shared.telemetry, prometheus: { ...shared.telemetry.prometheus, host: '127.0.0.1', port } },
    temporal: { ...shared.temporal, taskQueue },
  };
}

async function waitUntilReady(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ready = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`prometheus did not become ready at ${url}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

beforeAll(async () => {
  // The runtime is installed once per process: with its Prometheus exporter, before any server or worker.
  workerPorts.push(await freePort(), await freePort());
  coreMetricsUrl = await installRuntimeMetrics(configOn(workerPorts[0]), { logger: new DefaultLogger('WARN') });
  [env, workflowBundle] = await Promise.all([startTimeSkippingServer(), bundleWorkflows()]);
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-prometheus-'));
  const configFile = path.join(folder, 'prometheus.yml');
  const targets = workerPorts.map((port) => `'127.0.0.1:${port}'`).join(', ');
  writeFileSync(
    configFile,
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'scrape_configs:',
      '  - job_name: tollgate',
      '    static_configs:',
      `      - targets: [${targets}]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    PROMETHEUS,
    [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(folder, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  prometheus.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
  prometheus.once('exit', (code) => {
    if (code) console.error(`prometheus exited with ${code}: ${stderr}`);
  });
  await waitUntilReady(`${prometheusUrl}/-/ready`);
});

afterAll(async () => {
  if (prometheus?.pid && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
    process.kill(prometheus.pid, 'SIGTERM');
    await exited;
  }
  await env?.teardown();
});

type Sample = { metric: Record<string, string>; value: [number, string] };

async function query(promql: string): Promise<Sample[]> {
  const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await response.json()) as { status: string; error?: string; data: { result: Sample[] } };
  if (body.status !== 'success') throw new Error(`query ${promql}: ${body.error}`);
  return body.data.result;
}

/** Queries until the one value of `promql` is `expected` (Prometheus scrapes every second). */
async function eventually(promql: string, expected: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: Sample[] = [];
  while (Date.now() < deadline) {
    last = await query(promql);
    if (last.length === 1 && Number(last[0].value[1]) === expected) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${promql} never became ${expected}: ${JSON.stringify(last)}`);
}

/** Each series of a query as `label=value,…` → value. */
async function table(promql: string): Promise<Record<string, number>> {
  const rows = await query(promql);
  return Object.fromEntries(
    rows.map(({ metric, value }) => [
      Object.entries(metric)
        .map(([name, text]) => `${name}=${text}`)
        .join(','),
      Number(value[1]),
    ]),
  );
}

/** Queries until `promql` answers `expected` (as {@link table} shows it); the last answer is in the error. */
async function eventuallyTable(promql: string, expected: Record<string, number>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: Record<string, number> = {};
  while (Date.now() < deadline) {
    last = await table(promql);
    if (JSON.stringify(last) === JSON.stringify(expected)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(last, `${promql} after ${timeoutMs} ms`).toEqual(expected);
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a key up.',
  input: z.strictObject({ key: z.string() }),
  effect: 'read',
  handler: ({ key }) => ToolOutcome.ok({ key, found: true }),
});
const transfer = defineTool({
  name: 'transfer',
  description: 'Transfers money; it hangs, so its outcome is unknown.',
  input: z.strictObject({ amount: z.number() }),
  effect: 'irreversible_write',
  timeout: 200,
  maxAttempts: 1,
  handler: () => new Promise(() => {}),
});
const notify = defineTool({
  name: 'notify',
  description: 'Notifies a team.',
  input: z.strictObject({ team: z.string() }),
  effect: 'irreversible_write',
  maxAttempts: 1,
  handler: () => ToolOutcome.ok({ sent: true }),
});

function workerOn(port: number): Promise<TollgateWorker> {
  const config = configOn(port);
  return createWorker({
    config,
    connection: env.nativeConnection,
    workflowBundle,
    coreMetricsUrl,
    tools: [...builtInTools(config), lookup, transfer, notify],
    // No workflow cache: every workflow task replays the turn's history first (the sink must stay silent for what it replays),
    // and no sticky queue ties a turn to the worker that stops.
    workerOptions: { maxCachedWorkflows: 0 },
  });
}

function start(steps: ScriptStep[]) {
  return env.client.workflow.start('agentTurn', {
    workflowId: `turn-${randomUUID()}`,
    taskQueue,
    args: [{ taskId: `task-${randomUUID()}`, prompt: 'x', model: scripted([...steps, { text: 'done' }]) }],
  });
}

async function decide(handle: Awaited<ReturnType<typeof start>>, decision: 'approve' | 'deny'): Promise<void> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
  const [pending] = state.pendingApprovals;
  await handle.signal(approvalSignal, { callId: pending.callId, decision, argsDigest: pending.argsDigest, ...roundOf(pending) });
}

describe('Prometheus metrics of a worker', () => {
  it('counts a known set of turns exactly, across a worker restart in the middle of a turn, as Prometheus scrapes them', async () => {
    const first = await workerOn(workerPorts[0]);
    const firstRun = first.run();
    // Prometheus has scraped the worker before its first call, as it would a worker in service: each counter's first sample is 0.
    await eventually(`sum(up{instance="127.0.0.1:${workerPorts[0]}"})`, 1);
    const results: AgentTurnResult[] = [];
    const reads = await start([{ toolCalls: ['a', 'b', 'c'].map((key) => ({ tool: 'lookup', args: { key } })) }]);
    results.push(await reads.result());
    const draft = await start([{ toolCalls: [{ tool: 'save_draft', args: { path: 'note.md', content: 'hello' } }] }]);
    results.push(await draft.result());
    const unknown = await start([{ toolCalls: [{ tool: 'transfer', args: { amount: 5 } }] }]);
    await decide(unknown, 'approve');
    results.push(await unknown.result());
    // The fourth turn waits for its approval on the first worker, which then stops.
    const denied = await start([{ toolCalls: [{ tool: 'notify', args: { team: 'ops' } }] }]);
    await waitForState(denied, (current) => current.pendingApprovals.length > 0);
    await eventually('sum(tollgate_turns_total)', 3);
    await eventually('sum(tollgate_approvals_waiting{tool="notify"})', 1);
    first.shutdown();
    await firstRun;

    // A second worker (a restart) takes the turn over: it replays what the first recorded, and counts only what is new.
    const second = await workerOn(workerPorts[1]);
    await second.runUntil(async () => {
      await decide(denied, 'deny');
      // The decision is taken before the result is awaited (awaiting it lets the test server skip time towards the approval's expiry).
      await waitForState(denied, (current) => current.pendingApprovals.length === 0, 60_000);
      results.push(await denied.result());
      // The worker that took the wait over waits on nothing any more: every series of the gauge it serves is 0.
      const served = (await (await fetch(second.metricsUrl!)).text())
        .split('\n')
        .filter((line) => /^tollgate_approvals_waiting[{ ]/.test(line));
      expect(served.map((line) => Number(line.split(' ').at(-1)))).not.toContain(1);
      expect(served.every((line) => line.endsWith(' 0'))).toBe(true);
      // The second worker serves /metrics until Prometheus has scraped what it counted.
      await eventually('sum(max_over_time(tollgate_turns_total[10m]))', 4);
    });
    expect(results.map((result) => [result.status, result.toolCalls.map((call) => call.code ?? call.status)])).toEqual([
      ['completed', ['success', 'success', 'success']],
      ['completed', ['success']],
      ['completed', ['outcome_unknown']],
      ['completed', ['denied']],
    ]);

    // An empty code (a success) is no label in Prometheus. Each worker's counters end at their last value; the first
    // worker's series stopped with it, so the queries sum the last value of each.
    const last = (metric: string, by: string) => `sum by (${by}) (max_over_time(${metric}[10m]))`;
    expect(await table(last('tollgate_turns_total', 'status'))).toEqual({ 'status=completed': 4 });
    expect(await table(last('tollgate_tool_calls_total', 'tool,effect,status,code'))).toEqual({
      'effect=read,status=success,tool=lookup': 3,
      'effect=reversible_write,status=success,tool=save_draft': 1,
      'code=outcome_unknown,effect=irreversible_write,status=error,tool=transfer': 1,
      'code=denied,effect=irreversible_write,status=denied,tool=notify': 1,
    });
    // Every write's counter starts at 0; only transfer's moved.
    expect(await table(`${last('tollgate_outcome_unknown_total', 'tool')} > 0`)).toEqual({ 'tool=transfer': 1 });
    expect(await table(last('tollgate_outcome_unknown_total', 'tool'))).toMatchObject({ 'tool=notify': 0, 'tool=save_draft': 0 });
    expect(await table(last('tollgate_approval_wait_seconds_count', 'tool'))).toEqual({ 'tool=notify': 1, 'tool=transfer': 1 });
    // Both decided by a person: the approval the test gave, and the denial the second worker took.
    expect(await table(last('tollgate_approval_decisions_total', 'tool,decision,by'))).toEqual({
      'by=person,decision=approve,tool=transfer': 1,
      'by=person,decision=deny,tool=notify': 1,
    });
    expect(await table(last('tollgate_tool_call_duration_seconds_count', 'effect'))).toEqual({
      'effect=read': 3,
      'effect=reversible_write': 1,
      'effect=irreversible_write': 2,
    });
    // Eight model steps (two per turn), each one request: its tokens of both types, its duration, its first chunk.
    expect(await table(last('gen_ai_client_token_usage_count', 'model,type'))).toEqual({
      'model=scripted,type=input': 8,
      'model=scripted,type=output': 8,
    });
    expect(await table(last('gen_ai_client_operation_duration_seconds_count', 'model'))).toEqual({ 'model=scripted': 8 });
    expect(await table(last('tollgate_model_time_to_first_chunk_seconds_count', 'model'))).toEqual({ 'model=scripted': 8 });
    // Nothing waits any more: once Prometheus has seen both workers' targets go down (it scrapes every second), no
    // series of the gauge is left, and none ended at a wait.
    await eventuallyTable('sum(tollgate_approvals_waiting)', {});
    // The same endpoint carries the Temporal runtime's metrics.
    const runtimeSeries = await query('count({job="tollgate", __name__=~"temporal_.+"})');
    expect(Number(runtimeSeries[0]?.value[1] ?? 0)).toBeGreaterThan(0);
    // The PromQL of the docs answers.
    const unknownLastHour = await table('sum by (tool) (increase(tollgate_outcome_unknown_total[1h]))');
    expect(unknownLastHour['tool=transfer']).toBeGreaterThanOrEqual(1);
    expect(unknownLastHour['tool=notify']).toBe(0);
  }, 300_000);
});
