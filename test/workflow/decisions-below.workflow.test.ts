// Decisions carried up a tree of turns: a grandchild's approval is listed by the root's state query
// with its lineage, decided through the client at the grandchild, and its write runs once; a decision
// sent to the wrong turn, or naming the wrong call, changes nothing.
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import type { AgentTurnInput, AgentTurnResult, TurnLineage, TurnState } from '../../common/contract/turn';
import type { WaitBelow } from '../../common/contract/decisions';
import { AWAITING_APPROVAL_SEARCH_ATTRIBUTE, ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE } from '../../common/search-attributes';
import { openConfiguredStore } from '../../intents/open-store';
import { TollgateClient } from '../../client/tollgate-client';
import { createWorker } from '../../worker/create-worker';
import { intentKey } from '../../tools/intent-key';
import { approvalSignal, decideUpdate, stateQuery, waitsBelowSignal } from '../../workflows/messages';
import { countingCharge } from '../helpers/counting-charge';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, waitForState } from '../helpers/turn-runner';
import { ran, text, toolCall, useDelegationTree } from '../helpers/delegation-tree';
import { childWorkflowId } from '../../workflows/delegation/delegate-call';

const environment = useTimeSkippingEnvironment();
const { runTree, childState } = useDelegationTree(environment);

/**
 * A turn that asks to charge `cents` and then answers: it waits for approval of its one call,
 * `call-0-0`; `later` first makes a call the schema refuses, so that its charge is `call-1-0`.
 */
function charging(cents: number, later = false): Pick<AgentTurnInput, 'prompt' | 'model'> {
  const refused = later ? [{ toolCalls: [{ tool: 'charge_card', args: { cents: 'all' } }] }] : [];
  return {
    prompt: `charge ${cents}`,
    model: scripted([...refused, { toolCalls: [{ tool: 'charge_card', args: { cents } }] }, { text: 'done' }]),
  };
}

/** The lineage a parent sets on the child it starts for its call `callId` (contract of issue 47). */
function childOf(parent: string, root: string, callId: string, path: string[], request: string): TurnLineage {
  return { rootWorkflowId: root, parentWorkflowId: parent, parentCallId: callId, path, request, depth: path.length - 1 };
}

describe('decisions carried up the tree', () => {
  it("lists a grandchild's approval in the root's state with its lineage; decided at the grandchild through the client, it runs once", async () => {
    const { env, workflowBundle } = environment;
    const taskQueue = `test-${randomUUID()}`;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const store = openConfiguredStore(config);
    const charge = countingCharge();
    const activities = createActivities({ config, tools: [charge.tool], store });
    const worker = await createWorker({ config, connection: env.nativeConnection, activities, workflowBundle });
    const client = new TollgateClient(env.client, config);
    const taskId = `task-tree-${randomUUID()}`;
    const rootId = `turn-${randomUUID()}`;
    // Child ids follow the rule a parent uses: `<parent workflow id>-call-<callId>`.
    const childId = `${rootId}-call-call-0-1`;
    const grandchildId = `${childId}-call-call-0-1`;
    // The request as the parent's model wrote it, hidden characters and all: carried raw, escaped only when shown.
    const request = 'charge the deposit \u202Efor order 7';
    const childLineage = childOf(rootId, rootId, 'call-0-1', ['default', 'billing'], 'look after the deposit');
    const grandchildLineage = childOf(childId, rootId, 'call-0-1', ['default', 'billing', 'payments'], request);
    try {
      await worker.runUntil(async () => {
        const start = (workflowId: string, input: Omit<AgentTurnInput, 'taskId'>) =>
          env.client.workflow.start('agentTurn', { workflowId, taskQueue, args: [{ taskId, ...input }] });
        const root = await start(rootId, charging(100));
        await waitForState(root, (state) => state.pendingApprovals.length === 1);
        const child = await start(childId, { ...charging(200), lineage: childLineage });
        await waitForState(child, (state) => state.pendingApprovals.length === 1);
        const grandchild = await start(grandchildId, { ...charging(300, true), lineage: grandchildLineage });

        // The grandchild's own state: its pending approval carries its lineage and its own workflow id.
        const own = await waitForState(grandchild, (state) => state.pendingApprovals.length === 1);
        expect(own.pendingApprovals[0].lineage).toEqual({ ...grandchildLineage, workflowId: grandchildId });

        // The root lists both waits below it, each naming the turn that waits.
        const rootState = await waitForState(root, (state) => (state.waitsBelow ?? []).length === 2);
        const byTurn = (state: TurnState, workflowId: string) => state.waitsBelow!.find((wait) => wait.workflowId === workflowId)!;
        const grandchildWait = byTurn(rootState, grandchildId);
        expect(grandchildWait).toEqual<WaitBelow>({
          kind: 'approval',
          workflowId: grandchildId,
          callId: own.pendingApprovals[0].callId,
          tool: 'charge_card',
          argsDigest: own.pendingApprovals[0].argsDigest,
          round: 1,
          expiresAt: own.pendingApprovals[0].expiresAt,
          lineage: { ...grandchildLineage, workflowId: grandchildId },
        });
        expect(byTurn(rootState, childId)).toMatchObject({
          kind: 'approval',
          workflowId: childId,
          lineage: { depth: 1, path: ['default', 'billing'] },
        });
        // The root's own wait is not among them, and the child lists only its grandchild's.
        expect(rootState.pendingApprovals).toHaveLength(1);
        expect((await child.query(stateQuery)).waitsBelow).toEqual([grandchildWait]);

        // The Web UI's search attributes: the waiting grandchild flags itself and names its root.
        const attributes = (await grandchild.describe()).typedSearchAttributes;
        expect(attributes.get(ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE)).toBe(rootId);
        expect(attributes.get(AWAITING_APPROVAL_SEARCH_ATTRIBUTE)).toBe(true);

        // Sent to the root or the child, the grandchild's decision is refused, naming the turn where it waits.
        const callId = grandchildWait.callId!;
        expect(callId).toBe('call-1-0');
        const decision = { callId, decision: 'approve', argsDigest: grandchildWait.argsDigest };
        const there = `no call ${callId} waits for approval in this turn; it waits in ${grandchildId}, below this turn: send the decision there`;
        expect(await refusedWhy(root, decision)).toBe(there);
        expect(await refusedWhy(child, decision)).toBe(there);
        // The child's own call has the id the grandchild's first call had: the digest binds the decision to the grandchild's call.
        expect(await refusal(client.approve(childId, 'call-0-0', { argsDigest: grandchildWait.argsDigest }))).toBe(
          'argsDigest does not match the arguments of call call-0-0',
        );
        // At the grandchild, a call that does not wait there.
        expect(await refusal(client.approve(grandchildId, 'call-0-0', { argsDigest: grandchildWait.argsDigest }))).toBe(
          'no call call-0-0 waits for approval',
        );
        expect(charge.charges.size).toBe(0);

        // Decided through the client at the turn that waits: bound to its call and digest, it runs once.
        await client.approve(grandchildWait.workflowId, callId, { argsDigest: grandchildWait.argsDigest, approver: 'maria' });
        const done = await waitForState(grandchild, (state) => state.phase === 'finished');
        expect(done.toolCalls.at(-1)).toEqual(expect.objectContaining({ tool: 'charge_card', status: 'success', executions: 1 }));
        expect(charge.charges.get(intentKey(charge.tool, { cents: 300 }, taskId))).toBe(1);
        expect(charge.charges.size).toBe(1);

        // Once the grandchild's wait closed, the root lists only the child's.
        const after = await waitForState(root, (state) => state.waitsBelow?.length === 1);
        expect(after.waitsBelow![0].workflowId).toBe(childId);

        // A report that does not come from below the root is refused and recorded; the list stays.
        await root.signal(waitsBelowSignal, { workflowId: 'elsewhere', sequence: 99, waits: [] });
        const forged = await waitForState(root, (state) => state.rejectedDecisions.length > 0);
        expect(forged.rejectedDecisions.at(-1)!.why).toContain('must come from a turn below this one');
        expect(forged.waitsBelow).toHaveLength(1);

        // The others are denied; nothing else ran, and the grandchild's decision was taken by its own turn only.
        await client.deny(childId, 'call-0-0', { argsDigest: after.waitsBelow![0].argsDigest });
        await root.signal(approvalSignal, { callId: 'call-0-0', decision: 'deny', argsDigest: rootState.pendingApprovals[0].argsDigest });
        // Each turn is seen finished before its result is asked: the time-skipping server would otherwise skip ahead while three run.
        for (const handle of [child, root]) await waitForState(handle, (state) => state.phase === 'finished');
        const results = (await Promise.all([root.result(), child.result(), grandchild.result()])) as AgentTurnResult[];
        expect(results.map((result) => result.status)).toEqual(['completed', 'completed', 'completed']);
        expect(charge.charges.size).toBe(1);
        expect((await root.query(stateQuery)).waitsBelow).toEqual([]);
        const decided = (await grandchild.query(stateQuery)).decisions;
        expect(decided).toEqual([expect.objectContaining({ callId, decision: 'approve', approver: 'maria' })]);
      });
    } finally {
      await store.close();
    }
  });
});

describe('the list of waits below after a worker restart', () => {
  it("is rebuilt from the root's history by a new worker; the decision still reaches the child, and runs once", async () => {
    const { env, workflowBundle } = environment;
    const taskQueue = `test-${randomUUID()}`;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const store = openConfiguredStore(config);
    const charge = countingCharge();
    // The first worker keeps no workflow in its cache, so no task stays bound to it once it is gone; the next starts empty.
    const newWorker = (workerOptions?: { maxCachedWorkflows: number }) =>
      createWorker({
        config,
        connection: env.nativeConnection,
        activities: createActivities({ config, tools: [charge.tool], store }),
        workflowBundle,
        ...(workerOptions ? { workerOptions } : {}),
      });
    const taskId = `task-restart-${randomUUID()}`;
    const rootId = `turn-${randomUUID()}`;
    const childId = `${rootId}-call-call-0-1`;
    // With the cacheless first worker the first listing waited out one workflow task timeout here (10 s by default): 2 s keeps the test short.
    const start = (workflowId: string, input: Omit<AgentTurnInput, 'taskId'>) =>
      env.client.workflow.start('agentTurn', { workflowId, taskQueue, args: [{ taskId, ...input }], workflowTaskTimeout: '2s' });
    try {
      const root = env.client.workflow.getHandle(rootId);
      const child = env.client.workflow.getHandle(childId);
      let before: TurnState | undefined;
      await (
        await newWorker({ maxCachedWorkflows: 0 })
      ).runUntil(async () => {
        await start(rootId, charging(100));
        await start(childId, { ...charging(200), lineage: childOf(rootId, rootId, 'call-0-1', ['default', 'billing'], 'charge it') });
        before = await waitForState(root, (state) => state.waitsBelow?.length === 1);
      });
      // The first worker is gone with its cache: the next one replays the root from its history to answer.
      await (
        await newWorker()
      ).runUntil(async () => {
        const after = await root.query(stateQuery);
        expect(after.waitsBelow).toEqual(before!.waitsBelow);
        const [wait] = after.waitsBelow!;
        expect(wait.workflowId).toBe(childId);
        await new TollgateClient(env.client, config).approve(wait.workflowId, wait.callId!, { argsDigest: wait.argsDigest });
        await waitForState(child, (state) => state.phase === 'finished');
        await waitForState(root, (state) => state.waitsBelow?.length === 0);
        const rootWait = after.pendingApprovals[0];
        await root.signal(approvalSignal, { callId: rootWait.callId, decision: 'deny', argsDigest: rootWait.argsDigest });
        await waitForState(root, (state) => state.phase === 'finished');
      });
      expect(charge.charges.get(intentKey(charge.tool, { cents: 200 }, taskId))).toBe(1);
      expect(charge.charges.size).toBe(1);
    } finally {
      await store.close();
    }
  });
});

describe('decisions in a tree of delegate calls', () => {
  it("lists the grandchild's approval in the root's state; the client decides it at the grandchild, and it runs once", async () => {
    const client = new TollgateClient(environment.env.client, testConfig());
    let seen: WaitBelow | undefined;
    const { result } = await runTree({
      input: { prompt: 'Refund order 31.', agent: 'head' },
      replies: (root) => {
        const child = childWorkflowId(root, 'call-0-0');
        return [
          [root, [toolCall('supervisor', { request: 'See that order 31 is refunded.' }), text('Order 31 is refunded.')]],
          [child, [toolCall('refunds', { request: 'Refund order 31, 5 EUR.' }), text('Refunded.')]],
          [childWorkflowId(child, 'call-0-0'), [toolCall('refund_order', { orderId: 'g31', cents: 500 }), text('Refunded 500 cents.')]],
        ];
      },
      interact: async (handle, root) => {
        const child = childWorkflowId(root, 'call-0-0');
        const grandchild = childWorkflowId(child, 'call-0-0');
        const state = await waitForState(handle, (current) => (current.waitsBelow ?? []).length > 0);
        [seen] = state.waitsBelow!;
        expect(state.waitsBelow).toHaveLength(1);
        expect(seen).toMatchObject({
          kind: 'approval',
          workflowId: grandchild,
          callId: 'call-0-0',
          tool: 'refund_order',
          round: 1,
          agent: { name: 'refunds' },
          lineage: {
            rootWorkflowId: root,
            parentWorkflowId: child,
            parentCallId: 'call-0-0',
            path: ['head', 'supervisor', 'refunds'],
            request: 'Refund order 31, 5 EUR.',
            depth: 2,
            workflowId: grandchild,
          },
        });
        // The grandchild's own state says the same of its wait; its digest is the one the root lists.
        const own = await childState(grandchild, (current) => current.pendingApprovals.length > 0);
        expect(own.pendingApprovals[0]).toMatchObject({ argsDigest: seen!.argsDigest, lineage: seen!.lineage });
        // Sent to the root, where a call of that id is the delegate call, not a waiting one: refused, naming the grandchild.
        expect(await refusal(client.approve(root, 'call-0-0', { argsDigest: seen!.argsDigest }))).toBe(
          `no call call-0-0 waits for approval in this turn; it waits in ${grandchild}, below this turn: send the decision there`,
        );
        // The root agent's approver groups hold in its grandchild: bob may not decide on refund_order there.
        expect(await refusal(client.approve(seen!.workflowId, 'call-0-0', { argsDigest: seen!.argsDigest, approver: 'bob' }))).toBe(
          'bob may not decide on calls of refund_order: only alice may (the groups of an agent above this subagent)',
        );
        expect(ran('refund_order', 'g31')).toBe(0);
        await client.approve(seen!.workflowId, seen!.callId!, { argsDigest: seen!.argsDigest, approver: 'alice' });
        // Once the grandchild's wait closed, nothing is listed as waiting below the root.
        await waitForState(handle, (current) => current.waitsBelow?.length === 0);
      },
    });
    expect(ran('refund_order', 'g31')).toBe(1);
    expect(result).toMatchObject({ status: 'completed', answer: 'Order 31 is refunded.' });
    expect(result!.toolCalls).toEqual([expect.objectContaining({ tool: 'supervisor', status: 'success', executions: 1 })]);
    const grandchild = environment.env.client.workflow.getHandle(seen!.workflowId);
    expect(((await grandchild.result()) as AgentTurnResult).toolCalls).toEqual([
      expect.objectContaining({ tool: 'refund_order', executions: 1, approval: { decision: 'approve', by: 'alice', via: 'person' } }),
    ]);
  });
});

/** Why a turn's `decide` update refused a decision. */
function refusedWhy(handle: WorkflowHandle, decision: Record<string, unknown>): Promise<string> {
  return refusal(handle.executeUpdate(decideUpdate, { args: [decision as never] }));
}

/** Why an update was refused by the turn. */
async function refusal(update: Promise<unknown>): Promise<string> {
  try {
    await update;
  } catch (error) {
    if (error instanceof WorkflowUpdateFailedError) return (error.cause as Error).message;
    throw error;
  }
  throw new Error('the decision was taken');
}
