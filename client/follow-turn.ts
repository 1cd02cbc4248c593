import os from 'node:os';
import { createInterface } from 'node:readline/promises';
import type { AgentTurnResult, PendingApproval, ToolEvent } from '../common/types';
import { formatTable } from './format-table';
import type { TollgateClient } from './tollgate-client';

/** What to do with a call that waits for approval while a turn is followed. */
export type ApprovalMode = 'ask' | 'approve' | 'deny' | 'wait';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** How the person at the terminal decides on a pending call; without a terminal, `ask` denies. */
async function decide(pending: PendingApproval, mode: ApprovalMode): Promise<{ decision: 'approve' | 'deny'; reason: string } | undefined> {
  if (mode === 'wait') return undefined;
  if (mode === 'approve') return { decision: 'approve', reason: 'approved with --approve' };
  if (mode === 'deny') return { decision: 'deny', reason: 'denied with --deny' };
  if (!process.stdin.isTTY) {
    console.log('Not on a terminal and neither --approve nor --deny was given: the call is denied.');
    return { decision: 'deny', reason: 'no terminal to ask; run with --approve to send' };
  }
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  const answer = await prompt.question('Approve this call? [y/N] ');
  prompt.close();
  return /^y(es)?$/i.test(answer.trim()) ? { decision: 'approve', reason: 'approved at the terminal' } : { decision: 'deny', reason: 'denied at the terminal' };
}

/** One line for a finished tool call. */
export function describeEvent(event: ToolEvent): string {
  return `[step ${event.step + 1}] ${event.tool} (${event.effect}): ${event.status}${event.code ? ` ${event.code}` : ''}, ${event.attempts} execution${event.attempts === 1 ? '' : 's'}`;
}

/** The tool calls of a turn as a table. */
export function toolCallTable(events: ToolEvent[]): string {
  return formatTable(
    ['call', 'tool', 'effect', 'status', 'code', 'attempts', 'ms', 'size', 'truncated'],
    events.map((event) => [event.callId, event.tool, event.effect, event.status, event.code ?? '-', event.attempts, event.durationMs, event.originalSize, event.truncated ? 'yes' : '-']),
  );
}

/**
 * Follows a turn live and prints it: tool calls as they end, the model's text as it streams, and
 * each call that waits for approval (decided as `mode` says). On a terminal a spinner shows that
 * the turn is still waiting; elsewhere only plain lines are printed.
 */
export async function followTurn(client: TollgateClient, workflowId: string, { mode }: { mode: ApprovalMode }): Promise<AgentTurnResult> {
  const decided = new Set<string>();
  const spinning = process.stdout.isTTY;
  let frame = 0;
  let spinnerShown = false;
  let shownEvents = 0;
  let streamed = { step: -1, length: 0 };
  let waitingLine = '';
  const clearSpinner = () => {
    if (spinnerShown) process.stdout.write('\r\x1b[2K');
    spinnerShown = false;
  };
  const timer = spinning
    ? setInterval(() => {
        if (streamed.length > 0) return;
        process.stdout.write(`\r\x1b[2K${SPINNER[frame++ % SPINNER.length]} ${waitingLine || 'working…'}`);
        spinnerShown = true;
      }, 120)
    : undefined;
  try {
    const result = await client.follow(workflowId, async ({ state, modelText }) => {
      clearSpinner();
      waitingLine = state.phase === 'awaiting_approval' ? `waiting for approval of ${state.pendingApprovals.map((pending) => pending.callId).join(', ')}` : `${state.phase} (step ${state.step + 1})`;
      for (const event of state.toolCalls.slice(shownEvents)) {
        if (streamed.length > 0) process.stdout.write('\n');
        streamed = { step: event.step, length: 0 };
        console.log(describeEvent(event));
      }
      shownEvents = state.toolCalls.length;
      if (modelText && (state.step !== streamed.step || modelText.length > streamed.length)) {
        if (state.step !== streamed.step) streamed = { step: state.step, length: 0 };
        process.stdout.write(`${streamed.length === 0 ? `[step ${state.step + 1}] model: ` : ''}${modelText.slice(streamed.length)}`);
        streamed.length = modelText.length;
      }
      for (const pending of state.pendingApprovals.filter((entry) => !decided.has(entry.callId))) {
        decided.add(pending.callId);
        if (streamed.length > 0) process.stdout.write('\n');
        streamed = { step: state.step, length: 0 };
        console.log(`Approval needed for ${pending.callId}: ${pending.tool} (argsDigest ${pending.argsDigest.slice(0, 16)}…, expires ${pending.expiresAt})`);
        console.log(JSON.stringify(pending.args, null, 2).split('\n').map((line) => `  ${line}`).join('\n'));
        const choice = await decide(pending, mode);
        if (!choice) {
          console.log(`Waiting; decide with: tollgate approve ${workflowId} ${pending.callId}   (or deny)`);
          continue;
        }
        const options = { approver: os.userInfo().username, reason: choice.reason, argsDigest: pending.argsDigest };
        const receipt = choice.decision === 'approve' ? await client.approve(workflowId, pending.callId, options) : await client.deny(workflowId, pending.callId, options);
        console.log(`Decision accepted: ${receipt.decision} ${receipt.callId}.`);
      }
    });
    clearSpinner();
    if (streamed.length > 0) process.stdout.write(' …\n');
    return result;
  } finally {
    clearInterval(timer);
    clearSpinner();
  }
}
