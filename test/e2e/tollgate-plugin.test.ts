// Tollgate inside a worker of the user's own: Worker.create with the user's workflows and
// activities and TollgatePlugin, a user workflow that runs an agent as a child turn whose
// irreversible write waits for a person, on Temporal's dev server.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import { TollgatePlugin } from '../../worker/tollgate-plugin';
import { userActivities } from '../fixtures/user-activities';
import type { refundCase } from '../fixtures/user-workflows';
import { countingCharge } from '../helpers/counting-charge';
import { refunds } from '../fixtures/user-agents';
import { startDevServerEnvironment } from '../../testing/servers';
import { staticNotesSource } from '../helpers/static-tool-source';
import { testConfig } from '../helpers/test-config';
import { until } from '../helpers/until';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startDevServerEnvironment();
});

afterAll(async () => {
  await env?.teardown();
});

describe('TollgatePlugin in a worker of your own', () => {
  it('runs your workflow, which calls an agent whose charge a person approves once and gets its typed output, beside your own activity, and closes what it opened', async () => {
    const taskQueue = `orders-${randomUUID()}`;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const charge = countingCharge();
    const notes = staticNotesSource('notes', { a: 'kept' });
    const mine = userActivities();
    const plugin = new TollgatePlugin({ config, tools: [charge.tool], agents: [refunds], toolSources: [notes.source] });
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: path.join(__dirname, '..', 'fixtures', 'user-workflows.ts'),
      activities: mine.activities,
      plugins: [plugin],
    });
    const people = new TollgateClient(env.client, config);
    const workflowId = `refund-case-${randomUUID()}`;
    const childId = `${workflowId}-agent-refunds-refund-c-1`;

    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start<typeof refundCase>('refundCase', {
        taskQueue,
        workflowId,
        args: [{ caseId: 'c-1', cents: 1250 }],
      });
      // The child's approval waits in the inbox like any turn's, under the id derived from the parent's.
      const entry = await until('the child turn in the inbox', async () =>
        (await people.inbox()).find((waiting) => waiting.workflowId === childId && waiting.kind === 'approval'),
      );
      expect(entry).toMatchObject({ kind: 'approval', taskId: 'refund-c-1', tool: 'charge_card', args: { cents: 1250 } });
      expect(charge.charges.size).toBe(0);
      await people.approve(childId, (entry as { callId: string }).callId, {
        approver: 'alice',
        reason: 'the customer was charged twice',
        argsDigest: entry.kind === 'approval' ? (entry.shownDigest ?? entry.argsDigest) : undefined,
      });
      const answered = await handle.result();
      // A wrong call of executeAgent fails the user's workflow with invalid_input, naming what was wrong; no child starts.
      const wrong = env.client.workflow.execute<typeof refundCase>('refundCase', {
        taskQueue,
        workflowId: `${workflowId}-wrong`,
        args: [{ caseId: 'c-2', cents: 1, agent: ' ' }],
      });
      const failure = await wrong.then(
        () => undefined,
        (error: { cause?: { type?: string; message?: string } }) => error.cause,
      );
      expect(failure).toMatchObject({ type: 'invalid_input' });
      expect(failure?.message).toMatch(/^executeAgent: the agent must be a name \(a non-empty string\)/);
      return answered;
    });

    expect(result.parent).toBe(workflowId);
    expect(result.turn.status).toBe('completed');
    // The agent's typed output, checked against its schema, reached the user's workflow.
    expect(result.turn.agent).toEqual({ name: 'refunds', digest: refunds.digest });
    expect(result.turn.output).toEqual({ refunded: true, cents: 1250 });
    const event = result.turn.toolCalls.find((call) => call.tool === 'charge_card');
    expect(event).toMatchObject({ status: 'success', executions: 1, approval: { decision: 'approve', by: 'alice', via: 'person' } });
    // The write ran exactly once, and the user's own activity ran on the same worker.
    expect([...charge.charges.values()]).toEqual([1]);
    expect(mine.records).toEqual([{ caseId: 'c-1', status: 'completed', refunded: true }]);
    expect(result.recorded).toBe(1);
    // The child is a turn of the parent's, on the parent's task queue.
    const child = await env.client.workflow.getHandle(childId).describe();
    expect(child.type).toBe('agentTurn');
    expect(child.taskQueue).toBe(taskQueue);
    expect(child.parentExecution?.workflowId).toBe(workflowId);
    // The worker stopped: what the plugin opened is closed.
    expect(notes.record.events).toEqual(['open notes', 'close notes']);
  });

  it('refuses your activities under the names of its own, naming them, and closes what it had opened', async () => {
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue: `clash-${randomUUID()}` } };
    const notes = staticNotesSource('notes', { a: 'kept' });
    const plugin = new TollgatePlugin({ config, tools: [countingCharge().tool], toolSources: [notes.source] });
    const yours = { runTool: async () => 'yours', recordRefund: userActivities().activities.recordRefund };
    await expect(
      Worker.create({
        connection: env.nativeConnection,
        taskQueue: config.temporal.taskQueue,
        workflowsPath: path.join(__dirname, '..', 'fixtures', 'user-workflows.ts'),
        activities: yours,
        plugins: [plugin],
      }),
    ).rejects.toThrow("TollgatePlugin: your activities runTool have the names of Tollgate's; rename yours");
    expect(notes.record.events).toEqual(['open notes', 'close notes']);
  });
});
