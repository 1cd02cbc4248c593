// A turn and the child turns of its delegate calls, as `tollgate history` shows them: each child
// under the call that started it, with its agent and status; `--tree` loads the children's own
// calls and theirs in turn. Loading and printing go without recursion (a tree may be deep), and a
// tree is bounded: at most MAX_TREE_TURNS turns are loaded, each once.
import type { DelegateRecord } from '../common/contract/tools';
import type { TurnHandoff, TurnState } from '../common/contract/turn';
import { toolCallTable } from './follow-turn';
import { forTerminal } from './terminal-text';

/** The most turns one `tollgate history --tree` loads. */
export const MAX_TREE_TURNS = 200;

/** One turn of a tree: its calls, its handoffs and the child turns its delegate calls started. */
export interface TurnNode {
  workflowId: string;
  /** The agent that runs the turn now (after its handoffs); left out for the default agent. */
  agent?: string;
  status: TurnState['status'];
  toolCalls: TurnState['toolCalls'];
  handoffs?: TurnHandoff[];
  children: TurnChild[];
}

/** A delegate call's child: what the parent's event records, and the child turn when it was loaded (or why it was not). */
export interface TurnChild extends DelegateRecord {
  callId: string;
  turn?: TurnNode;
  /** Why the child's own calls are not shown: never started, the tree's bound, or its state could not be read. */
  notShown?: string;
}

function nodeOf(workflowId: string, state: TurnState): TurnNode {
  return {
    workflowId,
    ...(state.agent ? { agent: state.agent.name } : {}),
    status: state.status,
    toolCalls: state.toolCalls,
    ...(state.handoffs?.length ? { handoffs: state.handoffs } : {}),
    children: state.toolCalls.flatMap((event) => (event.delegate ? [{ callId: event.callId, ...event.delegate }] : [])),
  };
}

/**
 * Loads a turn and, with `depth` above 0, the child turns of its delegate calls down to that depth
 * (`Infinity`: the whole tree), breadth first, each workflow once and at most `maxTurns` in all.
 * A child that was never started (`refused`), or whose state cannot be read, carries why.
 */
export async function loadTurnTree({
  workflowId,
  loadState,
  depth = 0,
  maxTurns = MAX_TREE_TURNS,
}: {
  workflowId: string;
  loadState: (workflowId: string) => Promise<TurnState>;
  depth?: number;
  maxTurns?: number;
}): Promise<TurnNode> {
  const root = nodeOf(workflowId, await loadState(workflowId));
  const seen = new Set([workflowId]);
  const queue: Array<{ node: TurnNode; depth: number }> = [{ node: root, depth: 0 }];
  for (let next = queue.shift(); next; next = queue.shift()) {
    if (next.depth >= depth) continue;
    for (const child of next.node.children) {
      if (child.status === 'refused') child.notShown = 'never started';
      else if (seen.has(child.workflowId)) child.notShown = 'shown above';
      else if (seen.size >= maxTurns) child.notShown = `not loaded: the tree shows at most ${maxTurns} turns`;
      else {
        seen.add(child.workflowId);
        try {
          child.turn = nodeOf(child.workflowId, await loadState(child.workflowId));
          queue.push({ node: child.turn, depth: next.depth + 1 });
        } catch (error) {
          child.notShown = `its state could not be read: ${(error as Error).message.split('\n')[0]}`;
        }
      }
    }
  }
  return root;
}

function handoffLine({ from, to, step, reason }: TurnHandoff): string {
  return `handoff at step ${step + 1}: ${from} → ${to}${reason ? ` (${reason})` : ''}`;
}

/**
 * A tree as text: each turn's calls as a table; under a delegate call, its child (agent, status,
 * workflow id) and, when loaded, the child's own table indented; then the turn's handoffs. Every
 * text from a turn passes `forTerminal`.
 */
export function renderTurnTree(root: TurnNode): string {
  const lines: string[] = [];
  // Work items, last first: a line to print, or a turn whose table and children to print.
  const stack: Array<{ line: string } | { node: TurnNode; indent: string }> = [{ node: root, indent: '' }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    if ('line' in item) {
      lines.push(item.line);
      continue;
    }
    const { node, indent } = item;
    const items: typeof stack = [];
    if (node.toolCalls.length === 0) items.push({ line: `${indent}No tool calls yet.` });
    else {
      const [header, rule, ...rows] = toolCallTable(node.toolCalls).split('\n');
      items.push({ line: `${indent}${header}` }, { line: `${indent}${rule}` });
      node.toolCalls.forEach((event, index) => {
        items.push({ line: `${indent}${rows[index]}` });
        const child = node.children.find((candidate) => candidate.callId === event.callId);
        if (!child) return;
        const ended = child.turn ? child.turn.status : child.status;
        const agent = child.turn?.agent && child.turn.agent !== child.agent ? `${child.agent} (now ${child.turn.agent})` : child.agent;
        items.push({ line: forTerminal(`${indent}  └─ agent ${agent} · ${ended} · ${child.workflowId}`) });
        if (child.turn) items.push({ node: child.turn, indent: `${indent}     ` });
        else if (child.notShown && child.status !== 'refused') items.push({ line: forTerminal(`${indent}     (${child.notShown})`) });
      });
    }
    for (const handoff of node.handoffs ?? []) items.push({ line: forTerminal(`${indent}${handoffLine(handoff)}`) });
    for (let index = items.length - 1; index >= 0; index--) stack.push(items[index]);
  }
  return lines.join('\n');
}
