import type { PendingApproval, PendingResolution, PendingResume, WaitBelow, WaitLineage } from '../../common/contract/decisions';
import type { TurnState } from '../../common/contract/turn';
import { displayText, displayValue, hiddenWarning } from '../../common/display-text';

/** At most this many characters of one waiting call's arguments go into the Web UI's details. */
export const DETAILS_ARGS_CHARS = 2_000;

/** A waiting call's (already redacted) arguments as pretty JSON for the details, bounded, with no fence breaking out. */
function shownJson(args: unknown): string {
  // Hidden characters are marked as every surface marks them, so the Web UI shows no text the call does not carry.
  const whole = displayText(JSON.stringify(args, null, 2) ?? 'undefined').replace(/`/g, '\\u0060');
  if (whole.length <= DETAILS_ARGS_CHARS) return whole;
  return `${whole.slice(0, DETAILS_ARGS_CHARS)}\n… ${whole.length - DETAILS_ARGS_CHARS} more characters (the whole arguments: tollgate status --json)`;
}

/** The details of a model step waiting for a `resume` decision: what had streamed, and the exact JSON of each decision. */
function resumeDetails([pending]: PendingResume[]): string[] {
  const round = pending.round > 1 ? { round: pending.round } : {};
  const send = (decision: 'retry' | 'stop') => JSON.stringify({ step: pending.step, decision, ...round });
  const text = displayText(pending.partialText).replace(/`/g, "'");
  const shown = text.length <= DETAILS_ARGS_CHARS ? text : `…${text.slice(-DETAILS_ARGS_CHARS)}`;
  return [
    '### Waiting for a resume decision',
    '',
    `- **step ${pending.step + 1}** · the model stream broke after ${pending.chunks} chunk${pending.chunks === 1 ? '' : 's'} had gone out · since ${pending.since} · stops at ${pending.expiresAt}`,
    '',
    '  ```text',
    ...shown.split('\n').map((line) => `  ${line}`),
    '  ```',
    '',
    `To ask the model again, send the \`resume\` signal with \`${send('retry')}\`; to stop the turn, \`${send('stop')}\`; or \`tollgate resume <workflowId> [--stop]\`.`,
    '',
  ];
}

function cell(text: string): string {
  return displayText(text.replace(/\n/g, ' ')).replace(/\|/g, '\\|');
}

/** The calls waiting for approval: each one's digest, the exact JSON that approves it, and its arguments as shown. */
function approvalDetails(waiting: PendingApproval[]): string[] {
  const lines = ['### Waiting for approval', ''];
  for (const pending of waiting) {
    const digest = pending.shownDigest ?? pending.argsDigest;
    lines.push(`- **${cell(pending.callId)}** · ${cell(pending.tool)} · expires ${pending.expiresAt} · argsDigest \`${digest}\``);
    const round = pending.round > 1 ? { round: pending.round } : {};
    const send = JSON.stringify({ callId: pending.callId, decision: 'approve', argsDigest: digest, ...round }).replace(/`/g, '\\u0060');
    lines.push(`  To approve, send the \`approval\` signal with \`${send}\` (\`"deny"\` to deny)`);
    if (pending.policyNote) lines.push(`  No rule or grant decided it: ${cell(pending.policyNote)}`);
    const warning = hiddenWarning(displayValue(pending.args).hidden);
    if (warning) lines.push(`  **${warning}**`);
    if (pending.redactedValues)
      lines.push(
        `  ${pending.redactedValues} value${pending.redactedValues === 1 ? '' : 's'} redacted; the digest names the arguments as shown`,
      );
    lines.push(
      '',
      '  ```json',
      ...shownJson(pending.args)
        .split('\n')
        .map((line) => `  ${line}`),
      '  ```',
      '',
    );
  }
  lines.push(
    '',
    'Decide with the `approval` signal, e.g. `{ "callId": "…", "decision": "approve", "argsDigest": "…" }`, or `tollgate approve <workflowId> <callId>`.',
    '',
  );
  return lines;
}

/** The writes waiting for a resolution: why each is unknown, and the exact JSON that resolves it. */
function resolutionDetails(waiting: PendingResolution[]): string[] {
  const lines = ['### Waiting for a resolution (outcome unknown)', ''];
  for (const pending of waiting) {
    const digest = pending.shownDigest ?? pending.argsDigest;
    lines.push(`- **${cell(pending.callId)}** · ${cell(pending.tool)} · expires ${pending.expiresAt} · ${cell(pending.reason)}`, '');
    const round = pending.round > 1 ? { round: pending.round } : {};
    const json = JSON.stringify({ callId: pending.callId, outcome: 'applied', argsDigest: digest, ...round, note: '…' });
    lines.push(`  Send the \`resolve\` signal with \`${json}\` (or \`"outcome": "not_applied"\`), or \`tollgate resolve\`.`, '');
  }
  return lines;
}

/**
 * The decisions waiting in the turns below this one (subagents'), each with the turn to send it to.
 * What the parent asked is not shown here: it is the model's text, unredacted (the inboxes redact it).
 */
function belowDetails(waiting: WaitBelow[]): string[] {
  const lines = ["### Waiting in subagents' turns", ''];
  for (const wait of waiting) {
    const subject = wait.kind === 'resume' ? `step ${(wait.step ?? 0) + 1}` : cell(wait.callId ?? '');
    lines.push(
      `- **${subject}** · ${wait.kind}${wait.tool ? ` · ${cell(wait.tool)}` : ''} · in \`${cell(wait.workflowId)}\` · ${pathOf(wait.lineage)} · expires ${cell(wait.expiresAt)}`,
    );
  }
  lines.push(
    '',
    'Each is decided at the turn that waits (its workflow id above), as any decision: `tollgate inbox` shows what each needs.',
    '',
  );
  return lines;
}

/** The agents from the root's down to the waiting turn's. */
function pathOf(lineage: WaitLineage): string {
  return `agents ${lineage.path.map((agent) => cell(String(agent))).join(' → ')}`;
}

/** Each kind's section of the details, in the order they are shown; a kind with nothing waiting shows none. */
const SECTIONS: Array<(state: TurnState) => string[]> = [
  (state) => (state.pendingApprovals.length > 0 ? approvalDetails(state.pendingApprovals) : []),
  (state) => (state.pendingResume ? resumeDetails([state.pendingResume]) : []),
  (state) => ((state.pendingResolutions?.length ?? 0) > 0 ? resolutionDetails(state.pendingResolutions!) : []),
  (state) => ((state.waitsBelow?.length ?? 0) > 0 ? belowDetails(state.waitsBelow!) : []),
];

/** The markdown the Web UI shows for a turn: what waits for a person (approvals, a resume decision, resolutions) and the tool calls so far. */
export function renderDetails(state: TurnState): string {
  const lines = [
    `**Task** \`${cell(state.taskId)}\` · **status** ${state.status} · **phase** ${state.phase} · **step** ${state.step + 1}`,
    '',
  ];
  // Which agent asks: a person deciding on its calls sees whose turn it is, and which definition of it.
  if (state.agent) lines.splice(1, 0, `**Agent** ${cell(state.agent.name)} · definition \`${state.agent.digest.slice(0, 12)}\``);
  // A subagent's turn that waits says where it stands: its decisions are sent here, not to its root.
  const lineage = [
    ...state.pendingApprovals,
    ...(state.pendingResolutions ?? []),
    ...(state.pendingResume ? [state.pendingResume] : []),
  ].find((pending) => pending.lineage)?.lineage;
  if (lineage) {
    lines.splice(1, 0, `**Subagent** ${pathOf(lineage)} · depth ${cell(String(lineage.depth))} · root \`${cell(lineage.rootWorkflowId)}\``);
  }
  for (const section of SECTIONS) lines.push(...section(state));
  if (state.toolCalls.length > 0) {
    lines.push('### Tool calls', '');
    for (const event of state.toolCalls) {
      lines.push(
        `- ${event.callId} · ${event.tool} · ${event.effect} · **${event.status}**${event.code ? ` \`${event.code}\`` : ''} · ${event.executions} execution${event.executions === 1 ? '' : 's'} · ${event.durationMs} ms${event.approval ? ` · ${event.approval.decision === 'approve' ? 'approved' : 'denied'} by ${cell(event.approval.by)}` : ''}`,
      );
    }
  }
  return lines.join('\n');
}
