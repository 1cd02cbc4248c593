// The turn commands: run, start, status and follow a turn, and its tool calls as a table.
import { Option, type Command } from 'commander';
import type { AgentTurnInput, TurnState } from '../../common/contract/turn';
import { describeApproval, describeUsage, followTurn, toolCallTable } from '../follow-turn';
import { loadTurnTree, renderTurnTree } from '../turn-tree';
import { forTerminal } from '../terminal-text';
import { json, print, withClient } from './context';
import { describeResolution } from './decisions';

function turnInput(task: string, options: { taskId?: string; model?: string; tools?: string; agent?: string }): AgentTurnInput {
  return {
    taskId: options.taskId ?? `task-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}`,
    prompt: task,
    ...(options.agent ? { agent: options.agent } : {}),
    ...(options.model ? { model: options.model } : {}),
    ...(options.tools
      ? {
          tools: options.tools
            .split(',')
            .map((tool) => tool.trim())
            .filter(Boolean),
        }
      : {}),
  };
}

/** What `tollgate status` prints of a turn: where it is, its usage, its agent, what waits and what was rejected. */
export function describeState(workflowId: string, state: TurnState): string {
  const lines = [
    `${forTerminal(workflowId)}: ${state.status}, phase ${state.phase}, step ${state.step + 1}, ${state.toolCalls.length} tool call(s)`,
  ];
  if (state.usage) lines.push(`  ${describeUsage(state.usage, state.tokenBudget)}`);
  if (state.agent) {
    // The agent that runs the turn now, and how it got there when the turn was handed on.
    const path = state.handoffs?.length
      ? ` (handed on: ${[state.handoffs[0].from, ...state.handoffs.map((handoff) => handoff.to)].join(' → ')})`
      : '';
    lines.push(forTerminal(`  agent ${state.agent.name}${path}`));
  }
  for (const pending of state.pendingApprovals) {
    lines.push(forTerminal(`  waiting for approval: ${pending.callId} ${pending.tool}`));
    lines.push(
      ...describeApproval(pending)
        .text.split('\n')
        .slice(1)
        .map((line) => `  ${line}`),
    );
  }
  for (const pending of state.pendingResolutions ?? []) {
    lines.push(forTerminal(`  waiting for a resolution: ${pending.callId} ${pending.tool}`));
    lines.push(
      ...describeResolution({ workflowId, ...pending })
        .split('\n')
        .slice(1)
        .map((line) => `  ${line}`),
    );
  }
  if (state.rejectedDecisionsDropped > 0) lines.push(`  ${state.rejectedDecisionsDropped} older rejected decision(s) not kept`);
  for (const rejected of state.rejectedDecisions) lines.push(forTerminal(`  rejected decision: ${rejected.why}`));
  return lines.join('\n');
}

const turnOptions = (command: Command) =>
  command
    .option('--task-id <id>', 'the business task the turn belongs to (idempotency keys derive from it)')
    .option('--agent <name>', 'the agent that runs the turn (createWorker agents or config agents.<name>; default: the default agent)')
    .option('--model <name>', 'a model of the config (default: the agent’s, else model.default)')
    .option('--tools <list>', 'comma-separated tools the turn may call (default: all)');

/** `run`, `start`, `status` and `follow`. */
export function registerTurnCommands(program: Command): void {
  turnOptions(
    program
      .command('run')
      .description('start a turn and follow it live; the exit code is 0 only when it completes')
      .argument('<task>', 'what the agent should do'),
  )
    .addOption(new Option('--approve', 'approve every call that waits for approval').conflicts('deny'))
    .option('--deny', 'deny every call that waits for approval')
    .action(async (task: string, options) => {
      const result = await withClient(async (client) => {
        const handle = await client.startTurn(turnInput(task, options));
        if (!json()) console.log(`Started ${handle.workflowId}.`);
        return json()
          ? client.result(handle.workflowId)
          : followTurn(client, handle.workflowId, { mode: options.approve ? 'approve' : options.deny ? 'deny' : 'ask' });
      });
      print(
        result,
        () =>
          `\n${result.status}, ${describeUsage(result.usage, result.tokenBudget)}${result.answer ? `\n\n${forTerminal(result.answer)}` : ''}` +
          `\n\n${toolCallTable(result.toolCalls)}`,
      );
      if (result.status !== 'completed') process.exitCode = 1;
    });

  turnOptions(
    program.command('start').description('start a turn and print its workflow id').argument('<task>', 'what the agent should do'),
  ).action(async (task: string, options) => {
    const handle = await withClient((client) => client.startTurn(turnInput(task, options)));
    print(handle, () => handle.workflowId);
  });

  program
    .command('status')
    .description("a turn's status, phase, pending approvals and rejected decisions")
    .argument('<workflowId>')
    .action(async (workflowId: string) => {
      const state = await withClient((client) => client.state(workflowId));
      print(state, () => describeState(workflowId, state));
    });

  program
    .command('follow')
    .description('follow a running turn live until it ends (approvals are left to `tollgate approve`)')
    .argument('<workflowId>')
    .action(async (workflowId: string) => {
      const result = await withClient((client) => (json() ? client.result(workflowId) : followTurn(client, workflowId, { mode: 'wait' })));
      print(
        result,
        () =>
          `\n${result.status}, ${describeUsage(result.usage, result.tokenBudget)}${result.answer ? `\n\n${forTerminal(result.answer)}` : ''}`,
      );
      if (result.status !== 'completed') process.exitCode = 1;
    });
}

/** `history`: a turn's tool calls as a table, each delegate call's child turn under it; `--tree` shows the children's calls too. */
export function registerHistoryCommand(program: Command): void {
  program
    .command('history')
    .description("a turn's tool calls as a table, with the subagents' child turns under their calls (--tree: their calls too)")
    .argument('<workflowId>')
    .option('--tree', "follow the child turns of delegate calls, and theirs, showing each one's calls")
    .action(async (workflowId: string, options: { tree?: boolean }) => {
      const tree = await withClient((client) =>
        loadTurnTree({ workflowId, loadState: (id) => client.state(id), depth: options.tree ? Infinity : 0 }),
      );
      print(options.tree ? tree : tree.toolCalls, () => renderTurnTree(tree));
    });
}
