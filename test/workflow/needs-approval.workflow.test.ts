import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TurnState } from '../../common/contract/turn';
import { defineTool, type StatusAnswer } from '../../tools/define-tool';
import { approvalSignal } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

/** A read of sensitive records and a reversible bulk change, each counting its real runs. */
function sensitiveTools({ readNeedsApproval = true }: { readNeedsApproval?: boolean } = {}) {
  const counts = { reads: 0, changes: 0 };
  const applied = new Set<string>();
  const readRecords = defineTool({
    name: 'read_records',
    description: 'Reads patient records.',
    input: z.strictObject({ patient: z.string().describe('Whose records.') }),
    effect: 'read',
    ...(readNeedsApproval ? { needsApproval: true } : {}),
    handler: ({ patient }) => {
      counts.reads++;
      return { patient, records: 3 };
    },
  });
  const relabel = defineTool({
    name: 'relabel',
    description: 'Relabels cards.',
    input: z.strictObject({ cards: z.number().describe('How many cards.') }),
    effect: 'reversible_write',
    // A bulk change waits for a person; a small one does not.
    needsApproval: ({ cards }) => cards > 100,
    status: (_args, { idempotencyKey }): StatusAnswer => (applied.has(idempotencyKey) ? 'applied' : 'not_applied'),
    handler: ({ cards }, { idempotencyKey }) => {
      counts.changes++;
      applied.add(idempotencyKey!);
      return { relabelled: cards };
    },
  });
  return { tools: [readRecords, relabel], counts };
}

/** Decides every approval the turn asks for, in order, as `decisions` says; the call ids asked. */
function decideAll(decisions: Array<'approve' | 'deny'>, asked: string[]) {
  return async (handle: WorkflowHandle) => {
    for (const decision of decisions) {
      const state: TurnState = await waitForState(handle, (current) =>
        current.pendingApprovals.some((pending) => !asked.includes(pending.callId)),
      );
      const pending = state.pendingApprovals.find((waiting) => !asked.includes(waiting.callId))!;
      asked.push(pending.callId);
      await handle.signal(approvalSignal, { callId: pending.callId, decision, argsDigest: pending.argsDigest });
    }
  };
}

const readCall = { tool: 'read_records', args: { patient: 'p-1' } };

describe('approval as its own trait', () => {
  it('a read that needs approval waits for a person: approved, it runs once', async () => {
    const { tools, counts } = sensitiveTools();
    const asked: string[] = [];
    const { result } = await runTurn({
      tools,
      input: { taskId: `task-${randomUUID()}`, prompt: 'read', model: scripted([{ toolCalls: [readCall] }, { text: 'read' }]) },
      interact: decideAll(['approve'], asked),
    });
    expect(asked).toEqual(['call-0-0']);
    expect(counts.reads).toBe(1);
    expect(result.toolCalls.map((event) => [event.effect, event.status, event.executions, event.approval?.decision])).toEqual([
      ['read', 'success', 1, 'approve'],
    ]);
  });

  it('a read that needs approval, denied, runs 0 times', async () => {
    const { tools, counts } = sensitiveTools();
    const asked: string[] = [];
    const { result } = await runTurn({
      tools,
      input: { taskId: `task-${randomUUID()}`, prompt: 'read', model: scripted([{ toolCalls: [readCall] }, { text: 'no' }]) },
      interact: decideAll(['deny'], asked),
    });
    expect(counts.reads).toBe(0);
    expect(result.toolCalls.map((event) => [event.status, event.code, event.executions, event.approval?.decision])).toEqual([
      ['denied', 'denied', 0, 'deny'],
    ]);
  });

  it('a reversible write whose needsApproval says so on its arguments waits: the bulk change once approved, the small one unasked', async () => {
    const { tools, counts } = sensitiveTools();
    const asked: string[] = [];
    const steps = [
      {
        toolCalls: [
          { tool: 'relabel', args: { cards: 500 } },
          { tool: 'relabel', args: { cards: 5 } },
        ],
      },
      { text: 'done' },
    ];
    const { result } = await runTurn({
      tools,
      input: { taskId: `task-${randomUUID()}`, prompt: 'relabel', model: scripted(steps) },
      interact: decideAll(['approve'], asked),
    });
    expect(asked).toEqual(['call-0-0']);
    expect(counts.changes).toBe(2);
    expect(result.toolCalls.map((event) => [event.effect, event.status, event.executions, event.approval?.decision])).toEqual([
      ['reversible_write', 'success', 1, 'approve'],
      ['reversible_write', 'success', 1, undefined],
    ]);
  });

  it('config tools.<name>.needsApproval puts a read behind a person without touching its declaration', async () => {
    const { tools, counts } = sensitiveTools({ readNeedsApproval: false });
    const asked: string[] = [];
    const { result } = await runTurn({
      tools,
      config: testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' }, tools: { read_records: { needsApproval: true } } }),
      input: { taskId: `task-${randomUUID()}`, prompt: 'read', model: scripted([{ toolCalls: [readCall] }, { text: 'no' }]) },
      interact: decideAll(['deny'], asked),
    });
    expect(asked).toEqual(['call-0-0']);
    expect(counts.reads).toBe(0);
    expect(result.toolCalls[0]).toMatchObject({ status: 'denied', executions: 0 });
  });

  it('refuses needsApproval other than true on an irreversible write, naming the tool', () => {
    expect(() =>
      defineTool({
        name: 'pay',
        description: 'Pays.',
        input: z.strictObject({}),
        effect: 'irreversible_write',
        needsApproval: false,
        handler: () => 'paid',
      }),
    ).toThrow('tool pay: its effect (irreversible_write) always waits for a person; needsApproval may only be true');
  });
});
