// A subagent's write whose outcome is unknown, resolved by a person from the root's listing: the
// child's pay_out, approved in the child, is cut off at its 1 s timeout while the bank still works on
// it; the child waits for a resolution (outcomes.onUnknown: ask, the default). The root's state lists
// that wait (waitsBelow) with the child's workflow id and the call's digest; the person resolves it
// through the client at that workflow, and nothing runs the payment a second time.
import type { WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import type { WaitBelow } from '../../common/contract/decisions';
import type { AgentTurnResult } from '../../common/contract/turn';
import { childWorkflowId } from '../../workflows/delegation/delegate-call';
import { ran, text, toolCall, useDelegationTree } from '../helpers/delegation-tree';
import { testConfig } from '../helpers/test-config';
import { useTimeSkippingEnvironment, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const { runTree, approveInChild } = useDelegationTree(environment);

/**
 * Runs the desk → payer tree on order `orderId`, resolving the child's unknown payment as `outcome`
 * from the root's listing; `after` then acts on the tree (the root's handle) before the result is awaited.
 */
async function resolvedFromRoot(
  orderId: string,
  outcome: 'applied' | 'not_applied',
  after?: (root: WorkflowHandle, client: TollgateClient) => Promise<void>,
) {
  const seen: { wait?: WaitBelow } = {};
  const tree = await runTree({
    input: { prompt: `Pay order ${orderId} out.`, agent: 'desk' },
    replies: (root) => [
      [root, [toolCall('payer', { request: `Pay 700 cents for order ${orderId}.` }), text('The payer answered.')]],
      [childWorkflowId(root, 'call-0-0'), [toolCall('pay_out', { orderId, cents: 700 }), text('The bank was asked.')]],
    ],
    config: { outcomes: { resolveTimeout: '30m' } },
    interact: async (handle, root) => {
      const childId = childWorkflowId(root, 'call-0-0');
      await approveInChild(childId);
      // The root lists the child's resolution with the workflow id the decision goes to.
      const state = await waitForState(handle, (current) => (current.waitsBelow ?? []).some((wait) => wait.kind === 'resolution'));
      const wait = state.waitsBelow!.find((entry) => entry.kind === 'resolution')!;
      seen.wait = wait;
      expect(ran('pay_out', orderId)).toBe(1);
      // Decided from that listing alone: the workflow, the call and the digest it names.
      const client = new TollgateClient(environment.env.client, testConfig());
      const receipt = await client.resolve(wait.workflowId, wait.callId!, outcome, {
        resolver: 'maria',
        argsDigest: wait.argsDigest!,
        round: wait.round,
      });
      expect(receipt).toMatchObject({ callId: wait.callId, outcome, accepted: true });
      await after?.(handle, client);
      await waitForState(handle, (current) => (current.waitsBelow ?? []).length === 0 || current.phase === 'finished');
    },
  });
  return { ...tree, wait: seen.wait! };
}

describe("a subagent's unknown outcome", () => {
  it("is listed by the root with the child's workflow id; resolved applied there, the payment ran once and the parent's call succeeds", async () => {
    const { result, workflowId, wait } = await resolvedFromRoot('k1', 'applied');
    const childId = childWorkflowId(workflowId, 'call-0-0');
    expect(wait).toMatchObject({
      kind: 'resolution',
      workflowId: childId,
      callId: 'call-0-0',
      tool: 'pay_out',
      round: 1,
      lineage: { rootWorkflowId: workflowId, parentWorkflowId: workflowId, parentCallId: 'call-0-0', path: ['desk', 'payer'], depth: 1 },
    });
    expect(ran('pay_out', 'k1')).toBe(1);
    const child = (await environment.env.client.workflow.getHandle(childId).result()) as AgentTurnResult;
    expect(child.status).toBe('completed');
    expect(child.toolCalls).toEqual([expect.objectContaining({ tool: 'pay_out', status: 'success', executions: 1 })]);
    expect(result!.status).toBe('completed');
    expect(result!.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'payer',
        effect: 'irreversible_write',
        status: 'success',
        executions: 1,
        delegate: { agent: 'payer', workflowId: childId, status: 'completed' },
      }),
    ]);
  });

  it('resolved not_applied from the root, the payment waits for approval again (round 2), listed there too; denied, it never runs again', async () => {
    const { result, workflowId } = await resolvedFromRoot('k2', 'not_applied', async (root, client) => {
      // Not applied: running it again is a new irreversible call, so it waits for a person again, in round 2.
      const state = await waitForState(root, (current) =>
        (current.waitsBelow ?? []).some((wait) => wait.kind === 'approval' && wait.round === 2),
      );
      const again = state.waitsBelow!.find((wait) => wait.kind === 'approval')!;
      expect(again).toMatchObject({ workflowId: childWorkflowId(root.workflowId, 'call-0-0'), callId: 'call-0-0', tool: 'pay_out' });
      expect(ran('pay_out', 'k2')).toBe(1);
      await client.deny(again.workflowId, again.callId!, { approver: 'maria', argsDigest: again.argsDigest!, round: again.round });
    });
    const childId = childWorkflowId(workflowId, 'call-0-0');
    expect(ran('pay_out', 'k2')).toBe(1);
    const child = (await environment.env.client.workflow.getHandle(childId).result()) as AgentTurnResult;
    expect(child.status).toBe('completed');
    expect(child.toolCalls).toEqual([expect.objectContaining({ tool: 'pay_out', status: 'denied', executions: 1 })]);
    expect(result!.status).toBe('completed');
    expect(result!.toolCalls[0]).toMatchObject({ tool: 'payer', delegate: { status: 'completed' } });
    expect(result!.toolCalls[0].code).not.toBe('outcome_unknown');
  });
});
