// A subagent's child turn closed from outside, on the dev server (the time-skipping server neither
// reports a terminated child to its parent nor applies a parent close policy): a writing child
// terminated while it waits makes its parent's call outcome_unknown; a terminated parent leaves no
// child running, and an approval sent to the child after it runs nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalSignal } from '../../workflows/messages';
import { childWorkflowId } from '../../workflows/delegation/delegate-call';
import { ran, text, toolCall, useDelegationTree, type TreeEnvironment } from '../helpers/delegation-tree';
import { startDevServerEnvironment } from '../../testing/servers';
import { bundleWorkflows } from '../helpers/servers';

const environment = {} as TreeEnvironment;
beforeAll(async () => {
  [environment.env, environment.workflowBundle] = await Promise.all([startDevServerEnvironment(), bundleWorkflows()]);
});
afterAll(async () => {
  await environment.env?.teardown();
});
const { runTree, childState } = useDelegationTree(environment);

describe('a subagent closed from outside', () => {
  it('makes a writing call outcome_unknown when its child is terminated while it waits, and starts it no second time', async () => {
    const { result, workflowId } = await runTree({
      input: { prompt: 'Refund order 3.', agent: 'lead' },
      replies: (root) => [
        [root, [toolCall('refunds', { request: 'Refund order 3.' }), text('I do not know whether it was refunded.')]],
        [childWorkflowId(root, 'call-0-0'), [toolCall('refund_order', { orderId: 'k3', cents: 300 })]],
      ],
      interact: async (_, root) => {
        const childId = childWorkflowId(root, 'call-0-0');
        await childState(childId, (state) => state.pendingApprovals.length > 0);
        await environment.env.client.workflow.getHandle(childId).terminate('operator stopped it');
      },
    });
    expect(ran('refund_order', 'k3')).toBe(0);
    expect(result!.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'refunds',
        effect: 'irreversible_write',
        code: 'outcome_unknown',
        delegate: { agent: 'refunds', workflowId: childWorkflowId(workflowId, 'call-0-0'), status: 'terminated' },
      }),
    ]);
    expect(result).toMatchObject({ status: 'completed' });
  });

  it('leaves no child running when the parent is terminated: the child is terminated, an approval after it runs nothing', async () => {
    let childStatus = '';
    await runTree({
      input: { prompt: 'Refund order 2.', agent: 'lead' },
      replies: (root) => [
        [root, [toolCall('refunds', { request: 'Refund order 2.' })]],
        [childWorkflowId(root, 'call-0-0'), [toolCall('refund_order', { orderId: 'p2', cents: 200 })]],
      ],
      interact: async (handle, root) => {
        const childId = childWorkflowId(root, 'call-0-0');
        const waiting = await childState(childId, (state) => state.pendingApprovals.length > 0);
        await handle.terminate('parent stopped');
        const child = environment.env.client.workflow.getHandle(childId);
        for (let tries = 0; tries < 100 && childStatus !== 'TERMINATED'; tries++) {
          childStatus = (await child.describe()).status.name;
          if (childStatus !== 'TERMINATED') await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const [pending] = waiting.pendingApprovals;
        await child
          .signal(approvalSignal, { callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest })
          .catch(() => undefined);
      },
    });
    expect(childStatus).toBe('TERMINATED');
    expect(ran('refund_order', 'p2')).toBe(0);
  });
});
