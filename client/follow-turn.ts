import os from 'node:os';
import { createInterface } from 'node:readline/promises';
import { deepJson } from '../common/canonical-json';
import type { PendingApproval } from '../common/contract/decisions';
import type { ToolEvent } from '../common/contract/tools';
import type { AgentTurnResult, Usage } from '../common/contract/turn';
import { displayValue, hiddenWarning } from '../common/display-text';
import { approvalDigest } from '../tools/canonical-json';
import { formatTable } from './format-table';
import { forTerminal } from './terminal-text';
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
    // Said of the call at hand: which tool, and how to let it run (a new turn with --approve, or a decision of its own).
    const call = `${pending.tool} (${pending.callId})`;
    console.log(
      `Not on a terminal and neither --approve nor --deny was given: ${call} is denied and does not run. ` +
        `To let ${pending.tool} run, run the task again with --approve, or start it with \`tollgate start\` and decide with \`tollgate approve\`.`,
    );
    return { decision: 'deny', reason: `no terminal to ask about ${call}; run again with --approve to let ${pending.tool} run` };
  }
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  const answer = await prompt.question('Approve this call? [y/N] ');
  prompt.close();
  return /^y(es)?$/i.test(answer.trim())
    ? { decision: 'approve', reason: 'approved at the terminal' }
    : { decision: 'deny', reason: 'denied at the terminal' };
}

/** One line for a finished tool call, safe to print: `denied by alice, 0 executions`, `error outcome_unknown, 1 execution`. */
export function describeEvent(event: ToolEvent): string {
  const executions = `${event.executions} execution${event.executions === 1 ? '' : 's'}`;
  const decided = event.approval ? `${event.approval.decision === 'approve' ? 'approved' : 'denied'} by ${event.approval.by}` : '';
  // A denied call's status and code are the same word: it is said once, with who said it.
  const outcome =
    event.status === 'denied'
      ? `${decided || 'denied'}, ${executions}`
      : `${event.status}${event.code ? ` ${event.code}` : ''}, ${executions}${decided ? `, ${decided}` : ''}`;
  return forTerminal(`[step ${event.step + 1}] ${event.tool} (${event.effect}): ${outcome}`);
}

/** The tokens a turn used, against its budget when it has one: `tokens: 1234 of 5000 (in 1000, out 234)`. */
export function describeUsage(usage: Usage, budget?: number): string {
  const used = usage.inputTokens + usage.outputTokens;
  return `tokens: ${used}${budget === undefined ? '' : ` of ${budget}`} (in ${usage.inputTokens}, out ${usage.outputTokens})`;
}

/** The tool calls of a turn as a table, safe to print. */
export function toolCallTable(events: ToolEvent[]): string {
  return formatTable(
    ['call', 'tool', 'effect', 'status', 'code', 'executions', 'ms', 'size', 'truncated', 'decided by'],
    events.map((event) => {
      const cells = [event.callId, event.tool, event.effect, event.status, event.code ?? '-', event.executions, event.durationMs];
      const decided = event.approval?.by ?? '-';
      return [...cells, event.originalSize, event.truncated ? 'yes' : '-', decided].map((cell) => forTerminal(String(cell)));
    }),
  );
}

/**
 * The digest a decision on a waiting call names: that of the arguments as shown. It is the digest
 * of the real arguments unless secrets were redacted from them, and then the worker's digest of the
 * redacted copy (docs/security.md, Redaction); the workflow takes either.
 */
export function decisionDigest(pending: PendingApproval): string {
  return pending.redactedValues && pending.shownDigest ? pending.shownDigest : pending.argsDigest;
}

/** How many characters of a call's arguments a view that is not asked for them whole shows. */
export const SHOWN_ARGS_CHARS = 4_000;

/** What the terminal shows of a call waiting for approval, and whether it may be approved from that view. */
export interface ApprovalView {
  text: string;
  /** Whether the arguments shown are those the digest covers. */
  matches: boolean;
  /** Whether the arguments are shown whole; a call is approved only from a whole view (or by a digest the approver names). */
  complete: boolean;
}

/** The arguments as indented JSON; on one line where they nest too deep for the platform's writer (or to indent sensibly). */
function argumentsText(args: unknown): string {
  try {
    return JSON.stringify(args, null, 2) ?? 'undefined';
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return deepJson(args);
  }
}

/**
 * What the terminal shows of a call waiting for approval, safe to print: the tool and the
 * arguments as JSON, exactly those the digest it names covers (`matches` is false when they are
 * not, and then the call must not be approved from this view), cut after `maxArgsChars`
 * characters (`complete` is false then, and the call must not be approved from this view either:
 * what is past the cut was not seen). Redacted values are counted.
 */
export function describeApproval(
  pending: PendingApproval,
  { maxArgsChars = SHOWN_ARGS_CHARS }: { maxArgsChars?: number } = {},
): ApprovalView {
  const digest = decisionDigest(pending);
  const matches = approvalDigest(pending.args, pending.definitionDigest) === digest;
  const asker = pending.agent ? `, asked by agent ${forTerminal(pending.agent.name)}` : '';
  const header = `Approval needed for ${pending.callId}: ${pending.tool}${asker} (expires ${pending.expiresAt})\n  argsDigest ${digest}`;
  const whole = argumentsText(pending.args);
  const complete = whole.length <= maxArgsChars;
  const args = complete
    ? whole
    : `${whole.slice(0, maxArgsChars)}\n… ${whole.length - maxArgsChars} more characters (the whole arguments: --json)`;
  const lines = [header, ...args.split('\n').map((line) => `  ${line}`)];
  // Said after the arguments, where the eye ends, by the rules every surface shows a call with.
  const warning = hiddenWarning(displayValue(pending.args).hidden);
  if (warning) lines.push(`  ${warning}`);
  if (pending.redactedValues) {
    const values = `${pending.redactedValues} value${pending.redactedValues === 1 ? '' : 's'}`;
    lines.push(`  (${values} redacted: the call runs with the real ones, which this digest binds through the worker's record)`);
  }
  if (!matches) lines.push('These arguments do not match the digest of the call, so it cannot be approved from here.');
  if (!complete) lines.push('Cut: approve --all shows them whole first.');
  return { text: forTerminal(lines.join('\n')), matches, complete };
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
  let shownTokens = 0;
  let waitingLine = '';
  // While a question waits for its answer, nothing is drawn over it.
  let asking = false;
  const clearSpinner = () => {
    if (spinnerShown) process.stdout.write('\r\x1b[2K');
    spinnerShown = false;
  };
  const timer = spinning
    ? setInterval(() => {
        if (streamed.length > 0 || asking) return;
        process.stdout.write(`\r\x1b[2K${SPINNER[frame++ % SPINNER.length]} ${forTerminal(waitingLine) || 'working…'}`);
        spinnerShown = true;
      }, 120)
    : undefined;
  try {
    const result = await client.follow(workflowId, async ({ state, modelText }) => {
      clearSpinner();
      waitingLine =
        state.phase === 'awaiting_approval'
          ? `waiting for approval of ${state.pendingApprovals.map((pending) => pending.callId).join(', ')}`
          : `${state.phase} (step ${state.step + 1})`;
      for (const event of state.toolCalls.slice(shownEvents)) {
        if (streamed.length > 0) process.stdout.write('\n');
        streamed = { step: event.step, length: 0 };
        console.log(describeEvent(event));
      }
      shownEvents = state.toolCalls.length;
      // Each time a model step adds to the usage, the usage against the budget.
      const tokens = state.usage ? state.usage.inputTokens + state.usage.outputTokens : 0;
      if (state.usage && tokens > shownTokens) {
        if (streamed.length > 0) process.stdout.write('\n');
        streamed = { step: state.step, length: 0 };
        console.log(`[step ${state.step + 1}] ${describeUsage(state.usage, state.tokenBudget)}`);
        shownTokens = tokens;
      }
      if (modelText && (state.step !== streamed.step || modelText.length > streamed.length)) {
        if (state.step !== streamed.step) streamed = { step: state.step, length: 0 };
        const label = streamed.length === 0 ? `[step ${state.step + 1}] model: ` : '';
        process.stdout.write(`${label}${forTerminal(modelText.slice(streamed.length))}`);
        streamed.length = modelText.length;
      }
      for (const pending of state.pendingApprovals.filter((entry) => !decided.has(entry.callId))) {
        decided.add(pending.callId);
        if (streamed.length > 0) process.stdout.write('\n');
        streamed = { step: state.step, length: 0 };
        // What is approved here (by the person at the terminal or by --approve) is printed whole.
        const shown = describeApproval(pending, mode === 'ask' || mode === 'approve' ? { maxArgsChars: Number.POSITIVE_INFINITY } : {});
        console.log(shown.text);
        const mismatch = { decision: 'deny' as const, reason: 'the arguments shown did not match their digest' };
        asking = true;
        clearSpinner();
        const choice = await (shown.matches || mode === 'wait' ? decide(pending, mode) : Promise.resolve(mismatch)).finally(
          () => (asking = false),
        );
        if (!choice) {
          console.log(`Waiting; decide with: tollgate approve ${workflowId} ${pending.callId}   (or deny)`);
          continue;
        }
        // A signing client records its key's name as the approver; otherwise the login name stands in.
        const approver = client.signingKeyId ? undefined : os.userInfo().username;
        const options = { approver, reason: choice.reason, argsDigest: decisionDigest(pending) };
        const receipt =
          choice.decision === 'approve'
            ? await client.approve(workflowId, pending.callId, options)
            : await client.deny(workflowId, pending.callId, options);
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
