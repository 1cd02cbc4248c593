// The status lookup when a tool's own check cannot tell: before a call's first run, the intent store
// decides whether any attempt of the intent exists. None: it was never run, so not applied (a
// reversible write whose check says unknown on a field that differs can still run its first
// attempt). One started and unconfirmed, one the check cannot see, or any lookup after a run (a
// released row proves nothing): unknown, so it is never run a second time on a guess.
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLookupStatus } from '../../activities/boundary/lookup-status';
import { createRunTool } from '../../activities/boundary/run-tool';
import { openSqliteStore } from '../../intents/sqlite-store';
import { defineTool, type StatusAnswer } from '../../tools/define-tool';
import { createToolRegistry } from '../../tools/tool-registry';
import { runToolOnce } from '../helpers/run-tool-once';

/** A reversible write whose handler applies, then fails as `behave` says, and whose check answers `check` (or throws). */
function setup({ check, behave }: { check: () => StatusAnswer; behave: 'ok' | 'cut' }) {
  const applied: string[] = [];
  const tool = defineTool({
    name: 'set_email',
    description: 'Sets an e-mail',
    input: z.strictObject({ email: z.string() }),
    effect: 'reversible_write',
    status: () => check(),
    handler: ({ email }) => {
      applied.push(email.toLowerCase());
      if (behave === 'cut') throw new Error('socket hang up');
      return { email: email.toLowerCase() };
    },
  });
  const registry = createToolRegistry({ tools: [tool] });
  const store = openSqliteStore(':memory:');
  const runTool = createRunTool({ registry, store });
  const lookupStatus = createLookupStatus({ registry, store });
  const args = { email: 'Bob@Example.COM' };
  return {
    applied,
    run: (taskId: string) => runToolOnce(runTool, { taskId, callId: `call-${applied.length}-0`, tool: 'set_email', args }),
    lookup: (taskId: string, beforeFirstRun = true) =>
      new MockActivityEnvironment().run(lookupStatus, { taskId, callId: 'lookup', tool: 'set_email', args, beforeFirstRun }),
  };
}

describe('lookupStatus when the check cannot tell', () => {
  it('says not applied for an intent the store holds no attempt of, and unknown once one was started and never confirmed', async () => {
    const { applied, run, lookup } = setup({ check: () => 'unknown', behave: 'cut' });
    expect(await lookup('task-a')).toEqual({ state: 'not_applied' });
    await expect(run('task-a')).rejects.toMatchObject({ type: 'write_interrupted' });
    expect(await lookup('task-a')).toMatchObject({ state: 'unknown', reason: 'the tool cannot tell whether it took effect' });
    expect(applied).toEqual(['bob@example.com']);
    // Another task's intent of the same arguments is another intent: never attempted, so not applied.
    expect(await lookup('task-b')).toEqual({ state: 'not_applied' });
    // After a run, a store without a row proves nothing: unknown.
    expect(await lookup('task-b', false)).toMatchObject({ state: 'unknown' });
  });

  it('does the same for a check that throws: no attempt, not applied; a started one, unknown with the reason', async () => {
    const { run, lookup } = setup({
      check: () => {
        throw new Error('the API did not answer');
      },
      behave: 'cut',
    });
    expect(await lookup('task-c')).toEqual({ state: 'not_applied' });
    await expect(run('task-c')).rejects.toMatchObject({ type: 'write_interrupted' });
    expect(await lookup('task-c')).toMatchObject({ state: 'unknown', reason: 'the status check failed: the API did not answer' });
  });

  it('answers a committed intent from its receipt, whatever the check cannot tell', async () => {
    const { applied, run, lookup } = setup({ check: () => 'unknown', behave: 'ok' });
    expect(await run('task-d')).toMatchObject({ status: 'success', executions: 1 });
    expect(await lookup('task-d')).toMatchObject({ state: 'applied', source: 'store', receipt: { data: { email: 'bob@example.com' } } });
    expect(applied).toHaveLength(1);
  });
});
