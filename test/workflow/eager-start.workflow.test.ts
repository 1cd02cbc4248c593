// Eager workflow start (TollgateClient.startTurn's `eagerStart`): a client on the worker's own
// NativeConnection starts a turn that runs as any other; a client on another connection is refused
// by name, and the turn is not started.
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import { createWorker } from '../../worker/create-worker';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();

describe('eager start', () => {
  it('starts a turn from the worker connection that completes as any other; another connection is refused and starts nothing', async () => {
    const { env, workflowBundle } = environment;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue: `eager-${randomUUID()}` } };
    const worker = await createWorker({ config, connection: env.nativeConnection, workflowBundle });
    const onWorker = new TollgateClient(new Client({ connection: env.nativeConnection, namespace: env.namespace }), config);
    const elsewhere = new TollgateClient(env.client, config);
    await worker.runUntil(async () => {
      const script = [{ toolCalls: [{ tool: 'search_local_sources', args: { query: 'refund' } }] }, { text: 'found' }];
      const { workflowId } = await onWorker.startTurn({ taskId: 'eager', prompt: 'x', model: scripted(script) }, { eagerStart: true });
      const result = await onWorker.result(workflowId);
      expect(result).toMatchObject({ status: 'completed', answer: 'found' });
      expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'search_local_sources', status: 'success', executions: 1 })]);

      const refusedId = `eager-refused-${randomUUID()}`;
      await expect(
        elsewhere.startTurn({ taskId: 'eager', prompt: 'x', model: scripted(script) }, { workflowId: refusedId, eagerStart: true }),
      ).rejects.toThrow(/NativeConnection/);
      await expect(env.client.workflow.getHandle(refusedId).describe()).rejects.toThrow(/not found/i);
    });
  });
});
