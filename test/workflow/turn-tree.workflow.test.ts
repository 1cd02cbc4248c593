// The tree of turns as `tollgate history` shows it, from a real chain of subagents on the
// time-skipping server (top → middle → bottom, each a child turn of the one above): each child under
// the call that started it with its agent and status, and with --tree its own calls below it; and
// what the Web UI shows of a child (its static summary and details: the agent and the request).
import { describe, expect, it } from 'vitest';
import { childWorkflowId } from '../../workflows/delegation/delegate-call';
import { stateQuery } from '../../workflows/messages';
import { loadTurnTree, renderTurnTree } from '../../client/turn-tree';
import { text, toolCall, useDelegationTree } from '../helpers/delegation-tree';
import { useTimeSkippingEnvironment } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const { runTree } = useDelegationTree(environment);

describe('a tree of turns', () => {
  it('is shown by history with each child under its call, and by history --tree with the children’s calls, indented', async () => {
    let flat = '';
    let tree = '';
    let middleSummary: { summary?: string; details?: string } = {};
    const request = 'Find order t1.\u202E and `rm -rf` it';
    const { result, workflowId } = await runTree({
      input: { prompt: 'Where is order t1?', agent: 'top' },
      replies: (root) => {
        const middleId = childWorkflowId(root, 'call-0-0');
        return [
          [root, [toolCall('middle', { request }), text('It was delivered.')]],
          [middleId, [toolCall('bottom', { request: 'Look order t1 up.' }), text('Delivered, says bottom.')]],
          [childWorkflowId(middleId, 'call-0-0'), [toolCall('lookup_order', { orderId: 't1' }), text('Delivered.')]],
        ];
      },
      interact: async (handle, root) => {
        await handle.result();
        // The worker still runs: the state query of every turn of the tree is answered.
        const loadState = (id: string) => environment.env.client.workflow.getHandle(id).query(stateQuery);
        flat = renderTurnTree(await loadTurnTree({ workflowId: root, loadState }));
        const loaded = await loadTurnTree({ workflowId: root, loadState, depth: Infinity });
        tree = renderTurnTree(loaded);
        expect(loaded.children[0].turn!.children[0].turn!.toolCalls).toEqual([
          expect.objectContaining({ tool: 'lookup_order', status: 'success', executions: 1 }),
        ]);
        const described = await environment.env.client.workflow.getHandle(childWorkflowId(root, 'call-0-0')).describe();
        middleSummary = await described.staticSummary().then(async (summary) => ({ summary, details: await described.staticDetails() }));
      },
    });
    expect(result).toMatchObject({ status: 'completed' });
    const middleId = childWorkflowId(workflowId, 'call-0-0');
    const bottomId = childWorkflowId(middleId, 'call-0-0');

    const flatLines = flat.split('\n');
    expect(flatLines[2]).toMatch(/^call-0-0\s+middle\s+read\s+success/);
    expect(flatLines[3]).toBe(`  └─ agent middle · completed · ${middleId}`);
    expect(flatLines).toHaveLength(4);

    const lines = tree.split('\n');
    expect(lines[3]).toBe(`  └─ agent middle · completed · ${middleId}`);
    expect(lines[4]).toMatch(/^ {5}call\s+tool\s+effect/);
    expect(lines[6]).toMatch(/^ {5}call-0-0\s+bottom\s+read\s+success/);
    expect(lines[7]).toBe(`       └─ agent bottom · completed · ${bottomId}`);
    expect(lines[10]).toMatch(/^ {10}call-0-0\s+lookup_order\s+read\s+success\s+-\s+1/);
    expect(lines).toHaveLength(11);

    // The Web UI's summary of the child: its agent and the request, hidden characters marked, one line.
    expect(middleSummary.summary).toBe('agent middle: Find order t1.\\u{202E} and `rm -rf` it');
    expect(middleSummary.details).toContain('**Path** top → middle');
    expect(middleSummary.details).toContain(`asked by call call-0-0 of ${workflowId.replace(/[-_]/g, (c) => (c === '_' ? '\\_' : c))}`);
    // A backtick of the request cannot close the fenced block it is shown in.
    expect(middleSummary.details).toContain('```text\nFind order t1.\\u{202E} and \\u0060rm -rf\\u0060 it\n```');
  });
});
