// Grant conditions from outside (a person's approval carries them) in real turns on the time-skipping
// server: a condition whose references expand past the work budget is not recorded (the approval
// stands), one that cannot evaluate a call within the budget leaves that call to a person, and
// meanwhile another turn on the same worker is served. Every send's executions are counted.
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TurnState } from '../../common/contract/turn';
import { defineTool } from '../../tools/define-tool';
import { jsonSchemaInput } from '../../tools/json-schema/json-schema-input';
import { decideUpdate } from '../../workflows/messages';
import { eventLoopWorkProbe, expectLive } from '../helpers/event-loop-work-probe';
import { dagLevels, nestedArrays, nestedDagSchema } from '../helpers/schema-probes';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

/** The longest a whole turn on a fresh worker may hold its event loop: it makes a workflow sandbox (about 120 ms alone). */
const MAX_TURN_BUSY_MS = 500;

/** Decides, as alice, on the call that waits once `decided` decisions were taken; the state it waited in. */
async function decide(handle: WorkflowHandle, decided: number, verdict: 'approve' | 'deny', extra: Record<string, unknown> = {}) {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0 && current.decisions.length === decided);
  const [pending] = state.pendingApprovals;
  await handle.executeUpdate(decideUpdate, {
    args: [{ callId: pending.callId, decision: verdict, argsDigest: pending.argsDigest, approver: 'alice', ...extra }],
  });
  return state;
}

describe('grant and rule conditions, and edits, that make a validator work without end', () => {
  it('the DAG probe is not recorded, the folded one leaves a deep call to a person; the next calls and another turn are served', async () => {
    const { env } = environment;
    const sent: string[] = [];
    const send = defineTool({
      name: 'send_message',
      description: 'Sends a message.',
      input: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
      effect: 'irreversible_write',
      handler: ({ to }) => {
        sent.push(to);
        return { sent: true };
      },
    });
    const sendTo = (to: string, extra: Record<string, unknown> = {}) => ({
      toolCalls: [{ tool: 'send_message', args: { to, subject: 'Hi', body: 'Text', ...extra } }],
    });
    // 30 levels in under 2,000 characters: before, one call of the task stalled the whole worker for seconds.
    const dag = { properties: { to: { $ref: '#/$defs/L0' } }, $defs: dagLevels(30) };
    expect(JSON.stringify(dag).length).toBeLessThan(2_000);
    const folded = {
      properties: { to: { type: 'string' }, subject: {}, body: {}, tree: { $ref: '#/$defs/tree' } },
      $defs: { tree: { type: 'array', items: { allOf: [{ $ref: '#/$defs/tree' }, { $ref: '#/$defs/tree' }] } } },
    };
    let deepWait: TurnState | undefined;
    let other: TurnState | undefined;
    const probe = eventLoopWorkProbe();
    const { result, state } = await runTurn({
      tools: [send],
      config: testConfig(),
      input: {
        taskId: `task-${randomUUID()}`,
        prompt: 'x',
        model: scripted([
          sendTo('a@example.com'),
          sendTo('b@example.com'),
          sendTo('c@example.com', { tree: nestedArrays(40) }),
          sendTo('d@example.com', { tree: [[]] }),
          { text: 'done' },
        ]),
      },
      interact: async (handle) => {
        await decide(handle, 0, 'approve', { grant: { forMs: 3_600_000, when: dag } });
        // While the task's next call waits, another turn on the same worker runs to its end.
        await waitForState(handle, (current) => current.pendingApprovals.length > 0 && current.decisions.length === 1);
        const { taskQueue } = await handle.describe();
        const started = await env.client.workflow.start('agentTurn', {
          workflowId: `turn-${randomUUID()}`,
          taskQueue,
          args: [{ taskId: `other-${randomUUID()}`, prompt: 'x', model: scripted([sendTo('z@example.com'), { text: 'done' }]) }],
        });
        await decide(started, 0, 'approve');
        other = await waitForState(started, (current) => current.status !== 'running');
        await decide(handle, 1, 'approve', { grant: { forMs: 3_600_000, when: folded } });
        deepWait = await decide(handle, 2, 'deny');
      },
    });
    expectLive(probe.stop(), MAX_TURN_BUSY_MS);
    expect(result.status).toBe('completed');
    const grantId = state.decisions[1].grantId!;
    expect(result.toolCalls.map((event) => [event.status, event.approval && `${event.approval.decision} ${event.approval.by}`])).toEqual([
      ['success', 'approve alice'],
      ['success', 'approve alice'],
      ['denied', 'deny alice'],
      ['success', `approve grant:${grantId}`],
    ]);
    expect(state.rejectedDecisions.map((rejected) => rejected.why)).toEqual([
      expect.stringMatching(
        /its grant was not recorded: grant\.when: the condition is over its work budget: applying it once follows its references to more than 100000 nodes \(maxExpandedWork\)$/,
      ),
    ]);
    expect(deepWait?.pendingApprovals[0].policyNote).toBe(
      `grant ${grantId} cannot be evaluated for these arguments (checking it would visit more than 250000 schema nodes (maxCheckWork))`,
    );
    expect(other).toMatchObject({ status: 'completed' });
    expect(sent.sort()).toEqual(['a@example.com', 'b@example.com', 'd@example.com', 'z@example.com']);
  });

  it('a rule that cannot evaluate a call within the budget leaves it to a person with a note, and decides the next call itself', async () => {
    const sent: string[] = [];
    const send = defineTool({
      name: 'send_message',
      description: 'Sends a message.',
      input: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
      effect: 'irreversible_write',
      handler: ({ to }) => {
        sent.push(to);
        return { sent: true };
      },
    });
    const sendTo = (to: string, tree: unknown) => ({
      toolCalls: [{ tool: 'send_message', args: { to, subject: 'Hi', body: 'Text', tree } }],
    });
    const rule = {
      name: 'trees',
      tool: 'send_message',
      decision: 'approve' as const,
      when: {
        properties: { to: { type: 'string' }, subject: {}, body: {}, tree: { $ref: '#/$defs/tree' } },
        $defs: { tree: { type: 'array', items: { allOf: [{ $ref: '#/$defs/tree' }, { $ref: '#/$defs/tree' }] } } },
      },
    };
    let waited: TurnState | undefined;
    const probe = eventLoopWorkProbe();
    const { result } = await runTurn({
      tools: [send],
      config: testConfig({ approvals: { rules: [rule] } }),
      input: { prompt: 'x', model: scripted([sendTo('c@example.com', nestedArrays(40)), sendTo('d@example.com', [[]]), { text: 'done' }]) },
      interact: async (handle) => {
        waited = await decide(handle, 0, 'approve');
      },
    });
    expectLive(probe.stop(), MAX_TURN_BUSY_MS);
    expect(waited?.pendingApprovals[0].policyNote).toBe(
      'rule trees cannot be evaluated for these arguments (checking it would visit more than 250000 schema nodes (maxCheckWork)); a person decides',
    );
    expect(result.toolCalls.map((event) => [event.status, event.approval && `${event.approval.decision} ${event.approval.by}`])).toEqual([
      ['success', 'approve alice'],
      ['success', 'approve rule:trees'],
    ]);
    expect(sent).toEqual(['c@example.com', 'd@example.com']);
  });

  it('an approver’s edit is checked by the same bounded check: a tree 25 deep (a decision nests at most 32) is refused as invalid_arguments, the call keeps waiting and runs as asked', async () => {
    const planted: unknown[] = [];
    // A write whose input is a JSON Schema from outside (as an MCP or OpenAPI tool's is): the folded probe.
    const plant = defineTool({
      name: 'plant_tree',
      description: 'Plants a tree of arrays.',
      input: jsonSchemaInput(nestedDagSchema()),
      effect: 'irreversible_write',
      handler: (args) => {
        planted.push(args);
        return { planted: true };
      },
    });
    let refusal: unknown;
    const probe = eventLoopWorkProbe();
    const { result } = await runTurn({
      tools: [plant],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'plant_tree', args: { tree: [[]] } }] }, { text: 'done' }]) },
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        const [{ callId, argsDigest }] = state.pendingApprovals;
        const edit = { callId, decision: 'approve' as const, argsDigest, approver: 'alice', args: { tree: nestedArrays(25) } };
        refusal = await handle.executeUpdate(decideUpdate, { args: [edit] }).catch((error: unknown) => error);
        await handle.executeUpdate(decideUpdate, { args: [{ callId, decision: 'approve', argsDigest, approver: 'alice' }] });
      },
    });
    expectLive(probe.stop(), MAX_TURN_BUSY_MS);
    expect(String((refusal as { cause?: Error }).cause?.message)).toMatch(
      /edited arguments are refused \(invalid_arguments\): .*checking it would visit more than 250000 schema nodes \(maxCheckWork\)/,
    );
    expect(planted).toEqual([{ tree: [[]] }]);
    expect(result.toolCalls.map((event) => [event.status, event.executions])).toEqual([['success', 1]]);
  });
});
