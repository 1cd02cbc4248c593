// The worker's workflow cache is bounded (temporal.worker.maxCachedWorkflows): turns waiting for a
// person leave it, and each takes its approval after, replayed from its history, its write run once.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import { parseConfig, PROJECT_ROOT } from '../../config/load-config';
import { createWorker } from '../../worker/create-worker';
import { approvalSignal } from '../../workflows/messages';
import { bundleWorkflows, startTimeSkippingServer } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { countingCharge } from '../helpers/counting-charge';
import { scripted, waitForState } from '../helpers/turn-runner';

let env: TestWorkflowEnvironment;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await startTimeSkippingServer();
  workflowBundle = await bundleWorkflows();
});

afterAll(async () => {
  await env?.teardown();
});

describe('the workflow cache', () => {
  it('defaults to 500 turns and refuses a size of 1 or below 0, naming the key', () => {
    expect(testConfig().temporal.worker.maxCachedWorkflows).toBe(500);
    for (const size of [-1, 1, 2.5])
      expect(() =>
        parseConfig({ temporal: { worker: { maxCachedWorkflows: size } } }, { source: 'x.yaml', baseDir: PROJECT_ROOT, env: {} }),
      ).toThrow(/x\.yaml: temporal\.worker\.maxCachedWorkflows: /);
    expect(
      parseConfig({ temporal: { worker: { maxCachedWorkflows: 0 } } }, { source: 'x.yaml', baseDir: PROJECT_ROOT, env: {} }).temporal
        .worker,
    ).toEqual({
      maxCachedWorkflows: 0,
      localReads: false,
    });
  });

  it('holds at most its size: five turns wait with two cached, and each evicted turn takes its approval, its charge run once', async () => {
    const { tool: charge, charges } = countingCharge();
    const base = testConfig();
    const config = {
      ...base,
      temporal: { ...base.temporal, taskQueue: 'cache-test', worker: { ...base.temporal.worker, maxCachedWorkflows: 2 } },
    };
    const worker = await createWorker({ config, connection: env.nativeConnection, tools: [charge], workflowBundle });
    const tollgate = new TollgateClient(env.client, config);
    const settledCacheSize = async () => {
      const deadline = Date.now() + 5_000;
      while (worker.worker.getStatus().numCachedWorkflows > 2 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      return worker.worker.getStatus().numCachedWorkflows;
    };
    await worker.runUntil(async () => {
      const ids = ['cache-a', 'cache-b', 'cache-c', 'cache-d', 'cache-e'];
      for (const [index, id] of ids.entries()) {
        const script = [{ toolCalls: [{ tool: 'charge_card', args: { cents: 100 + index } }] }, { text: 'charged' }];
        await tollgate.startTurn({ taskId: id, prompt: 'charge', model: scripted(script) }, { workflowId: id });
      }
      const pending = [];
      for (const id of ids) {
        const state = await waitForState(env.client.workflow.getHandle(id), (each) => each.pendingApprovals.length > 0);
        pending.push(state.pendingApprovals[0]);
      }
      // The worker evicts past its size once the task that loaded a turn completes.
      expect(await settledCacheSize()).toBeLessThanOrEqual(2);
      // Signals (no query first): the first three turns are not in the cache when their approval comes.
      for (const [index, id] of ids.entries()) {
        const { callId, argsDigest } = pending[index];
        await env.client.workflow.getHandle(id).signal(approvalSignal, { callId, decision: 'approve', approver: 'maria', argsDigest });
      }
      // Waited for by describe, not by result: on the time-skipping server awaiting a result lets time jump ahead.
      for (const id of ids) {
        const deadline = Date.now() + 30_000;
        while ((await env.client.workflow.getHandle(id).describe()).status.name === 'RUNNING' && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const results = await Promise.all(ids.map((id) => tollgate.result(id)));
      expect(results.map((result) => result.status)).toEqual(Array(5).fill('completed'));
      expect(results.map((result) => result.toolCalls[0])).toEqual(
        [0, 1, 2, 3, 4].map((index) =>
          expect.objectContaining({ tool: 'charge_card', status: 'success', executions: 1, originalSize: `charged ${100 + index}`.length }),
        ),
      );
      expect([...charges.values()]).toEqual([1, 1, 1, 1, 1]);
    });
  });
});
