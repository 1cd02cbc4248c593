import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { openConfiguredStore } from '../../intents/open-store';
import type { AgentTurnResult, ScriptStep } from '../../common/contract/turn';
import type { ModelStepInput, RunToolInput } from '../../common/activity-types';
import type { TollgateConfig } from '../../config/config-schema';
import { createWorker } from '../../worker/create-worker';
import { stateQuery } from '../../workflows/messages';
import { scripted, useTimeSkippingEnvironment } from '../helpers/turn-runner';
import { testConfig } from '../helpers/test-config';
import { taskFolderName } from '../../tools/built-in/workspace-path';
import { eventLoopProbe } from '../helpers/event-loop-probe';

/** Backtracks exponentially on every run of words not followed by 30 digits, which is every document of the corpus. */
const CATASTROPHIC = '([a-z]+\\s?)+\\d{30}';
const SEARCH_TIMEOUT_MS = 3_000;

const environment = useTimeSkippingEnvironment();

/** Waits in real time until `ready` holds, failing with `what` after `timeoutMs`. */
async function until(ready: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a worker facing a catastrophically backtracking regular expression', () => {
  it('keeps serving other turns and its event loop while the hostile search runs, and ends that search at its timeout', async () => {
    const { env, workflowBundle } = environment;
    const taskQueue = `liveness-${randomUUID()}`;
    const base = testConfig({
      retry: { initialInterval: '100ms', maximumInterval: '1s' },
      tools: { search_local_sources: { timeout: `${SEARCH_TIMEOUT_MS}ms`, maxAttempts: 2 } },
    });
    const config: TollgateConfig = { ...base, temporal: { ...base.temporal, taskQueue } };
    const store = openConfiguredStore(config);
    const activities = createActivities({ config, store });
    const runs: Array<{ taskId: string; ended: boolean }> = [];
    const modelInputs: ModelStepInput[] = [];
    const observed = {
      ...activities,
      modelStep: async (input: ModelStepInput) => {
        modelInputs.push(structuredClone(input));
        return activities.modelStep(input);
      },
      runTool: async (input: RunToolInput) => {
        const run = { taskId: input.taskId, ended: false };
        runs.push(run);
        try {
          return await activities.runTool(input);
        } finally {
          run.ended = true;
        }
      },
    };
    // A plain client, so that waiting for a result never lets the test server skip time.
    const client = new Client({ connection: env.connection, namespace: 'default' });
    const start = (taskId: string, script: ScriptStep[]): Promise<WorkflowHandle> =>
      client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue,
        args: [{ taskId, prompt: 'search', model: scripted(script) }],
      });
    const worker = await createWorker({ config, connection: env.nativeConnection, activities: observed, workflowBundle });
    const probe = eventLoopProbe();
    try {
      await worker.runUntil(async () => {
        const hostile = await start('hostile', [
          { toolCalls: [{ tool: 'search_local_sources', args: { query: CATASTROPHIC, mode: 'regex' } }] },
          { text: 'That pattern took too long.' },
        ]);
        await until(() => runs.some((run) => run.taskId === 'hostile'), 'the hostile search started');
        await new Promise((resolve) => setTimeout(resolve, 300));

        const normalStarted = Date.now();
        const normal = await start('normal', [
          {
            toolCalls: [
              { tool: 'search_local_sources', args: { query: 'refund annual plans' } },
              { tool: 'search_local_sources', args: { query: 'SEV[12]', mode: 'regex' } },
            ],
          },
          { text: 'Found them.' },
        ]);
        const normalResult = (await normal.result()) as AgentTurnResult;
        const normalElapsedMs = Date.now() - normalStarted;
        const hostileState = await hostile.query(stateQuery);

        expect(normalResult).toMatchObject({ status: 'completed', answer: 'Found them.' });
        expect(normalResult.toolCalls.map(({ status, executions }) => ({ status, executions }))).toEqual([
          { status: 'success', executions: 1 },
          { status: 'success', executions: 1 },
        ]);
        expect(normalElapsedMs).toBeLessThan(SEARCH_TIMEOUT_MS - 300);
        expect(hostileState).toMatchObject({ status: 'running', phase: 'tools' });
        expect(runs.filter((run) => run.taskId === 'hostile' && !run.ended)).toHaveLength(1);

        const hostileStarted = Date.now();
        const hostileResult = (await hostile.result()) as AgentTurnResult;
        expect(hostileResult).toMatchObject({ status: 'completed', answer: 'That pattern took too long.' });
        expect(hostileResult.toolCalls).toEqual([
          expect.objectContaining({ tool: 'search_local_sources', status: 'error', code: 'transient_failure', executions: 2 }),
        ]);
        expect(Date.now() - hostileStarted).toBeLessThan(2 * SEARCH_TIMEOUT_MS + 5_000);
        const seen = modelInputs
          .filter((input) => input.taskId === 'hostile')
          .at(-1)
          ?.messages.find((message) => message.role === 'tool');
        expect(seen).toMatchObject({
          role: 'tool',
          tool: 'search_local_sources',
          result: {
            status: 'error',
            code: 'transient_failure',
            retryable: true,
            message: `search_local_sources timed out after ${SEARCH_TIMEOUT_MS} ms`,
          },
        });
        const lastNormalInput = modelInputs.filter((input) => input.taskId === 'normal').at(-1);
        const found = lastNormalInput?.messages.filter((message) => message.role === 'tool');
        expect(JSON.stringify(found)).toContain('refund-policy');
        expect(JSON.stringify(found)).toContain('incident-severity');
      });
    } finally {
      const worstDelayMs = probe.stop();
      await store.close();
      expect(worstDelayMs, 'the event loop was blocked this long at most').toBeLessThan(500);
    }
  });

  it("keeps serving other turns while a status check meets a FIFO at a draft's place, and ends that call without blocking", async () => {
    const { env, workflowBundle } = environment;
    const taskQueue = `liveness-fifo-${randomUUID()}`;
    const base = testConfig();
    const config: TollgateConfig = { ...base, temporal: { ...base.temporal, taskQueue } };
    // What one approved shell call could leave behind: a FIFO where the task's draft would go.
    const folder = path.join(config.workspace, 'drafts', taskFolderName('fifo'));
    mkdirSync(folder, { recursive: true });
    const fifo = path.join(folder, 'brief.md');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const store = openConfiguredStore(config);
    const client = new Client({ connection: env.connection, namespace: 'default' });
    const start = (taskId: string, script: ScriptStep[]): Promise<WorkflowHandle> =>
      client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue,
        args: [{ taskId, prompt: 'write', model: scripted(script) }],
      });
    const worker = await createWorker({ config, connection: env.nativeConnection, store, workflowBundle });
    const probe = eventLoopProbe();
    try {
      await worker.runUntil(async () => {
        const started = Date.now();
        const blocked = await start('fifo', [
          { toolCalls: [{ tool: 'save_draft', args: { path: 'brief.md', content: 'x' } }] },
          { text: 'Could not save.' },
        ]);
        const normal = await start('normal', [
          { toolCalls: [{ tool: 'search_local_sources', args: { query: 'refund annual plans' } }] },
          { text: 'Found it.' },
        ]);
        const [blockedResult, normalResult] = (await Promise.all([blocked.result(), normal.result()])) as AgentTurnResult[];
        expect(normalResult).toMatchObject({ status: 'completed', answer: 'Found it.' });
        expect(blockedResult.status).toBe('completed');
        // The guard refuses a special file at the draft's place before anything runs: no read of it, no write over it.
        expect(blockedResult.toolCalls).toEqual([expect.objectContaining({ tool: 'save_draft', status: 'error', executions: 0 })]);
        expect(blockedResult.toolCalls[0].code).toBe('forbidden');
        expect(Date.now() - started).toBeLessThan(10_000);
        expect(statSync(fifo).isFIFO()).toBe(true);
      });
    } finally {
      const worstDelayMs = probe.stop();
      await store.close();
      expect(worstDelayMs, 'the event loop was blocked this long at most').toBeLessThan(500);
    }
  });
});
