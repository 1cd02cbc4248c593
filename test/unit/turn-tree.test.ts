// The tree `tollgate history --tree` loads and prints, on states as the `state` query answers them:
// a child never started, a child whose state cannot be read, a child id met twice, the bound on the
// turns loaded, a deep chain (printed without recursion), a handoff, and hostile text marked.
import { describe, expect, it } from 'vitest';
import type { ToolEvent } from '../../common/contract/tools';
import type { TurnState } from '../../common/contract/turn';
import { loadTurnTree, renderTurnTree } from '../../client/turn-tree';
import { describeState } from '../../client/cli/turns';
import { startingState } from '../../workflows/turn/turn-run';

function call(callId: string, tool: string, delegate?: ToolEvent['delegate']): ToolEvent {
  return {
    callId,
    step: 0,
    tool,
    effect: 'read',
    status: 'success',
    executions: 1,
    durationMs: 3,
    originalSize: 10,
    truncated: false,
    ...(delegate ? { delegate } : {}),
  };
}

function state(toolCalls: ToolEvent[], extra: Partial<TurnState> = {}): TurnState {
  return { ...startingState('task-1'), status: 'completed', toolCalls, ...extra };
}

describe('the tree of a turn', () => {
  it('marks children never started, unreadable or met twice, and loads each workflow once', async () => {
    const states: Record<string, TurnState> = {
      root: state([
        call('call-0-0', 'helper', { agent: 'helper', workflowId: 'root-call-call-0-0', status: 'completed' }),
        call('call-0-1', 'helper', { agent: 'helper', workflowId: 'gone', status: 'completed' }),
        call('call-0-2', 'helper', { agent: 'helper', workflowId: 'never', status: 'refused' }),
        call('call-0-3', 'helper', { agent: 'helper', workflowId: 'root-call-call-0-0', status: 'completed' }),
      ]),
      // The child handed itself on: the tree names the agent asked and the one that runs it now.
      'root-call-call-0-0': state([call('call-0-0', 'lookup_order')], {
        agent: { name: 'closer', digest: 'd' },
        handoffs: [{ from: 'helper', to: 'closer', step: 0 }],
      }),
    };
    const asked: string[] = [];
    const loadState = async (id: string) => {
      asked.push(id);
      if (!states[id]) throw new Error(`workflow not found: ${id}\nstack`);
      return states[id];
    };
    const tree = await loadTurnTree({ workflowId: 'root', loadState, depth: Infinity });
    expect(asked).toEqual(['root', 'root-call-call-0-0', 'gone']);
    expect(tree.children.map((child) => child.notShown)).toEqual([
      undefined,
      'its state could not be read: workflow not found: gone',
      'never started',
      'shown above',
    ]);
    const text = renderTurnTree(tree);
    expect(text).toContain('  └─ agent helper (now closer) · completed · root-call-call-0-0\n     call');
    expect(text).toContain('     handoff at step 1: helper → closer\n');
    expect(text).toContain('     (its state could not be read: workflow not found: gone)');
    expect(text).toContain('  └─ agent helper · refused · never\n');
    expect(text).toContain('     (shown above)');
  });

  it('loads at most maxTurns turns, and prints a chain 3,000 deep without recursion', async () => {
    const depth = 3_000;
    const loadState = async (id: string) => {
      const level = Number(id.slice(1));
      return level >= depth
        ? state([])
        : state([call('call-0-0', 'next', { agent: 'next', workflowId: `t${level + 1}`, status: 'completed' })]);
    };
    const bounded = await loadTurnTree({ workflowId: 't0', loadState, depth: Infinity, maxTurns: 3 });
    expect(bounded.children[0].turn!.children[0].turn!.children[0].notShown).toBe('not loaded: the tree shows at most 3 turns');
    const whole = await loadTurnTree({ workflowId: 't0', loadState, depth: Infinity, maxTurns: depth + 1 });
    const lines = renderTurnTree(whole).split('\n');
    expect(lines.at(-1)!.trim()).toBe('No tool calls yet.');
    expect(lines.at(-1)!.length - lines.at(-1)!.trimStart().length).toBe(depth * 5);
  });

  it('shows handoffs, and marks hidden characters in what a turn recorded', async () => {
    const hostile = state([call('call-0-0', 'helper', { agent: 'helper', workflowId: 'x\u202Eevil\u001b[2J', status: 'completed' })], {
      handoffs: [{ from: 'triage', to: 'billing', step: 0, reason: 'a \u202Erefund' }],
    });
    const text = renderTurnTree(await loadTurnTree({ workflowId: 'root', loadState: async () => hostile }));
    expect([...text].filter((char) => char === '\u202E' || char === '\u001b')).toEqual([]);
    expect(text).toContain('└─ agent helper · completed · x\\u{202E}evil');
    expect(text).toContain('handoff at step 1: triage → billing (a \\u{202E}refund)');
  });
});

describe('tollgate status of a turn that was handed on', () => {
  it('names the agent that runs it now and the path it went', () => {
    const handed = state([], {
      agent: { name: 'billing', digest: 'd' },
      handoffs: [{ from: 'triage', to: 'billing', step: 0, reason: 'a refund' }],
    });
    expect(describeState('turn-1', handed).split('\n')).toContain('  agent billing (handed on: triage → billing)');
    expect(describeState('turn-1', state([], { agent: { name: 'triage', digest: 'd' } })).split('\n')).toContain('  agent triage');
    expect(describeState('turn-1', state([]))).not.toContain('agent');
  });
});
