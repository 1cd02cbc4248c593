// A worker killed while a subagent's child turn waits for a person, on the dev server: the worker
// process serving the tree is stopped with SIGKILL while the child's refund waits for approval
// (listed by the root's state); a new worker process starts, the person approves from the root's
// listing, and the refund runs once, in the new process. Executions are counted by the handlers
// themselves, in a log file every process appends to.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import type { WaitBelow } from '../../common/contract/decisions';
import type { AgentTurnResult, TurnState } from '../../common/contract/turn';
import { bundleWorkflows, startDevServerEnvironment } from '../../testing/servers';
import { childWorkflowId } from '../../workflows/delegation/delegate-call';
import { stateQuery } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { executionsIn, leadModel } from '../helpers/tree-parts';
import { until } from '../helpers/until';
import { killWorker, startWorkerProcess } from '../helpers/worker-processes';

let env: TestWorkflowEnvironment;
let folder: string;
let bundleFile: string;
const processes: ChildProcess[] = [];

beforeAll(async () => {
  env = await startDevServerEnvironment();
  folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-tree-restart-'));
  bundleFile = path.join(folder, 'workflows.js');
  writeFileSync(bundleFile, (await bundleWorkflows()).code);
});

afterAll(async () => {
  await Promise.all(processes.map(killWorker));
  await env?.teardown();
});

describe('a worker killed while a subagent waits for a person', () => {
  it('loses nothing: a new worker takes the tree up, and the approval from the root listing runs the refund once', async () => {
    const taskQueue = `tree-restart-${Date.now()}`;
    const executionLog = path.join(folder, 'executions.jsonl');
    const settings = {
      address: env.address,
      taskQueue,
      sqliteFile: path.join(folder, 'intents.db'),
      workspace: path.join(folder, 'workspace'),
      bundleFile,
      executionLog,
    };
    const first = await startWorkerProcess('tree-worker', settings);
    processes.push(first);
    const rootId = `tree-restart-${Date.now()}`;
    const root = await env.client.workflow.start('agentTurn', {
      workflowId: rootId,
      taskQueue,
      args: [{ taskId: `task-${rootId}`, prompt: 'Refund order o-1.', agent: 'lead', model: leadModel('refunds') }],
    });
    const childId = childWorkflowId(rootId, 'call-0-0');
    const waitOf = (state: TurnState): WaitBelow | undefined => state.waitsBelow?.find((wait) => wait.kind === 'approval');
    const listed = await until('the root to list the child waiting', async () => waitOf(await root.query(stateQuery)));
    expect(listed).toMatchObject({ workflowId: childId, tool: 'refund_order', lineage: { path: ['lead', 'refunds'], depth: 1 } });

    // The worker dies without a word while the child waits; nothing ran.
    await killWorker(first);
    expect(executionsIn(executionLog)).toEqual([]);

    // A new worker process; the person decides from what the root lists, sent to the child that waits.
    const second = await startWorkerProcess('tree-worker', settings);
    processes.push(second);
    const client = new TollgateClient(env.client, testConfig());
    // Until the new worker's first poll reaches the server, the client's query is refused: that is "not yet".
    const receipt = await until('the approval to be accepted', () =>
      client.approve(listed.workflowId, listed.callId!, { argsDigest: listed.argsDigest!, approver: 'maria', round: listed.round }),
    );
    expect(receipt).toMatchObject({ callId: listed.callId, decision: 'approve' });

    const result = (await root.result()) as AgentTurnResult;
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'refunds',
        status: 'success',
        executions: 1,
        delegate: { agent: 'refunds', workflowId: childId, status: 'completed' },
      }),
    ]);
    const child = (await env.client.workflow.getHandle(childId).result()) as AgentTurnResult;
    expect(child.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'refund_order',
        status: 'success',
        executions: 1,
        approval: expect.objectContaining({ by: 'maria' }),
      }),
    ]);
    // Once, by the new process, under the root's task.
    const refunds = executionsIn(executionLog, 'refund_order');
    expect(refunds).toHaveLength(1);
    expect(refunds[0].pid).toBe(second.pid);
    expect((await root.query(stateQuery)).waitsBelow ?? []).toEqual([]);
  }, 180_000);
});
