import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { IdempotencyStore } from '../../intents/intent-store';
import { openSqliteStore } from '../../intents/sqlite-store';
import { defineTool } from '../../tools/define-tool';
import { approvalSignal } from '../../workflows/messages';
import { scripted, waitForState, useTurnRunner } from '../helpers/turn-runner';
import { roundOf } from '../../testing/round-of';

const runTurn = useTurnRunner();

/** A real in-memory store whose claim throws `thrown` for its first `failures` calls. */
function claimFailing(failures: number, thrown: () => unknown) {
  const real = openSqliteStore(':memory:');
  let claims = 0;
  const store: IdempotencyStore = {
    ...real,
    claim: async (request) => {
      claims++;
      if (claims <= failures) throw thrown();
      return real.claim(request);
    },
  };
  return { store, claims: () => claims };
}

/** A write that counts its real executions. */
function countedWrite(effect: 'reversible_write' | 'irreversible_write') {
  const applied = new Set<string>();
  let executions = 0;
  const tool = defineTool({
    name: effect === 'reversible_write' ? 'save_note' : 'send_note',
    description: 'writes a note',
    input: z.strictObject({ note: z.string().describe('the note') }),
    effect,
    status: ({ note }: { note: string }) => (applied.has(note) ? 'applied' : 'not_applied'),
    handler: async ({ note }: { note: string }) => {
      executions++;
      applied.add(note);
      return `wrote ${note}`;
    },
  });
  return { tool, executions: () => executions };
}

const noteStep = (tool: string) => ({ toolCalls: [{ tool, args: { note: 'hello' } }] });

describe('a turn whose idempotency store fails a claim (the default onUnknown: ask)', () => {
  it('a fresh reversible write whose first claim throws a plain Error runs once when the store is back: success, nobody asked', async () => {
    const { store, claims } = claimFailing(1, () => new Error('connection terminated unexpectedly'));
    const { tool, executions } = countedWrite('reversible_write');
    const { result, state } = await runTurn({
      tools: [tool],
      store,
      input: { prompt: 'note it', model: scripted([noteStep('save_note'), { text: 'done' }]) },
    });
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'save_note', status: 'success', executions: 1 })]);
    expect(executions()).toBe(1);
    expect(claims()).toBe(2);
    expect(state.pendingResolutions ?? []).toEqual([]);
  });

  it('a reversible write whose store stays down ends as not_run with 0 executions; the turn answers, nobody is asked', async () => {
    const { store } = claimFailing(Number.POSITIVE_INFINITY, () => 'the store is gone');
    const { tool, executions } = countedWrite('reversible_write');
    const { result, history, modelInputs } = await runTurn({
      tools: [tool],
      store,
      input: { prompt: 'note it', model: scripted([noteStep('save_note'), { text: 'done' }]) },
    });
    expect(result).toMatchObject({ status: 'completed', answer: 'done' });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'save_note', status: 'error', code: 'not_run', executions: 0 })]);
    expect(executions()).toBe(0);
    // No wait for a person: no timer was started for a resolution, and the model was told nothing happened.
    expect((history.events ?? []).filter((event) => event.timerStartedEventAttributes)).toEqual([]);
    const told = modelInputs.at(-1)!.messages.find((message) => message.role === 'tool');
    expect(told).toMatchObject({
      result: { code: 'not_run', message: expect.stringMatching(/did not run, nothing happened: .*the store is gone/) },
    });
  });

  it('an approved irreversible write whose store stays down ends as not_run: nothing sent, nobody asked to resolve it', async () => {
    const { store } = claimFailing(Number.POSITIVE_INFINITY, () => undefined);
    const { tool, executions } = countedWrite('irreversible_write');
    const { result, history } = await runTurn({
      tools: [tool],
      store,
      input: { prompt: 'send it', model: scripted([noteStep('send_note'), { text: 'done' }]) },
      interact: async (handle) => {
        const waiting = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        const [pending] = waiting.pendingApprovals;
        await handle.signal(approvalSignal, {
          callId: pending!.callId,
          decision: 'approve',
          argsDigest: pending!.argsDigest,
          ...roundOf(pending!),
        });
      },
    });
    expect(result).toMatchObject({ status: 'completed', answer: 'done' });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_note', status: 'error', code: 'not_run', executions: 0 })]);
    expect(executions()).toBe(0);
    // The only timer is the approval's; none for a resolution.
    expect((history.events ?? []).filter((event) => event.timerStartedEventAttributes).length).toBeLessThanOrEqual(1);
  });
});
