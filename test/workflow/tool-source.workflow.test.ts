import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AgentTurnResult } from '../../common/contract/turn';
import { createWorker } from '../../worker/create-worker';
import { staticNotesSource } from '../helpers/static-tool-source';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();

describe('createWorker({ toolSources }) with a source of its own', () => {
  it('opens it at start, runs a turn through its tool at the boundary, and closes it at shutdown', async () => {
    const taskQueue = `tool-source-${randomUUID()}`;
    const config = testConfig({ temporal: { taskQueue } });
    const { source, record } = staticNotesSource('notes', { a: 'refunds take 5 days' });
    const worker = await createWorker({
      config,
      connection: environment.env.nativeConnection,
      workflowBundle: environment.workflowBundle,
      tools: [],
      toolSources: [source],
    });
    expect(record.events).toEqual(['open notes']);
    const result = await worker.runUntil(async () => {
      const handle = await environment.env.client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue,
        args: [
          {
            taskId: 'task-1',
            prompt: 'x',
            model: scripted([{ toolCalls: [{ tool: 'notes__read', args: { id: 'a' } }] }, { text: 'done' }]),
          },
        ],
      });
      return (await handle.result()) as AgentTurnResult;
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'notes__read', effect: 'read', status: 'success', executions: 1 })]);
    expect(record.answers).toEqual(['note: refunds take 5 days']);
    expect(record.events).toEqual(['open notes', 'close notes']);
  });

  it('stops before anything else is opened when a source cannot open, naming it', async () => {
    const { source } = staticNotesSource('notes', {}, { failure: new Error('the notes database is not reachable') });
    const failure = createWorker({ config: testConfig(), toolSources: [source] });
    await expect(failure).rejects.toThrow(/^tool source "notes" could not open: the notes database is not reachable$/);
  });
});
