// `npm run demo -- --delegate`: a coordinator whose only tool is a researcher subagent. The
// coordinator's turn asks the researcher (a child agentTurn); the researcher reads the corpus with
// the read tools and asks to send its brief (an irreversible write), which waits in the child. The
// root's state lists that wait (waitsBelow) with the child's workflow id; the person at the terminal
// (or --approve / --deny) decides it there, and the decision goes to the child that waits.
import os from 'node:os';
import { createInterface } from 'node:readline/promises';
import { defineAgent, type AgentDefinition } from '../../agents/define-agent';
import type { PendingApproval, WaitBelow } from '../../common/contract/decisions';
import type { AgentTurnResult, ModelSelection } from '../../common/contract/turn';
import { decisionDigest, describeApproval, describeEvent, toolCallTable, type ApprovalMode } from '../follow-turn';
import { forTerminal } from '../terminal-text';
import type { TollgateClient } from '../tollgate-client';

/** The root turn's agent. */
export const COORDINATOR = 'coordinator';

/** How often the root's state is read while the tree runs (ms). */
const POLL_MS = 250;

/**
 * The demo's two agents: the researcher (the read tools and send_message, on `model` when given,
 * else the config's default: the scripted plan searches, reads, sends and answers) and the
 * coordinator, whose only tool is the researcher.
 */
export function delegateAgents(model?: string): AgentDefinition<unknown>[] {
  const researcher = defineAgent({
    name: 'researcher',
    description: 'Reads the local sources on a question and sends the requester a brief of what they say.',
    instructions: 'Search the local sources, read the best matches, send the requester a brief of them, then answer with the brief.',
    ...(model ? { model } : {}),
    tools: ['search_local_sources', 'get_document', 'send_message'],
  });
  const coordinator = defineAgent({
    name: COORDINATOR,
    description: 'Answers requests by asking the researcher.',
    instructions: 'Ask the researcher to look the request up and brief the requester, then answer.',
    tools: [researcher],
  });
  return [researcher, coordinator];
}

/** The coordinator's model for the scripted and loopback demos: one delegate call with the request, then the answer. */
export function coordinatorScript(request: string): ModelSelection {
  return {
    provider: 'scripted',
    script: [
      { toolCalls: [{ tool: 'researcher', args: { request } }] },
      { text: 'I asked the researcher to look this up and brief the requester; its answer, and what became of the send, follow.' },
    ],
  };
}

/** The person's decision on a call that waits in a subagent, as `mode` says; without a terminal, `ask` denies. */
async function decide(mode: ApprovalMode): Promise<{ decision: 'approve' | 'deny'; reason: string }> {
  if (mode === 'approve') return { decision: 'approve', reason: 'approved with --approve' };
  if (mode === 'deny') return { decision: 'deny', reason: 'denied with --deny' };
  if (!process.stdin.isTTY) {
    console.log(
      'Not on a terminal and neither --approve nor --deny was given: the send is denied. Run again with --approve to let it run.',
    );
    return { decision: 'deny', reason: 'no terminal to ask; run again with --approve' };
  }
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  const answer = await prompt.question('Approve this call? [y/N] ');
  prompt.close();
  return /^y(es)?$/i.test(answer.trim())
    ? { decision: 'approve', reason: 'approved at the terminal' }
    : { decision: 'deny', reason: 'denied at the terminal' };
}

/** Decides one approval that waits below the root: shown from the waiting child's own state, sent to that child. */
async function decideBelow(client: TollgateClient, wait: WaitBelow, mode: ApprovalMode): Promise<void> {
  const state = await client.state(wait.workflowId);
  const pending: PendingApproval | undefined = state.pendingApprovals.find((entry) => entry.callId === wait.callId);
  if (!pending) return;
  const path = wait.lineage.path.join(' → ');
  console.log(forTerminal(`Subagent ${path} (workflow ${wait.workflowId}, depth ${wait.lineage.depth}) waits for a decision:`));
  const shown = describeApproval(pending, { maxArgsChars: Number.POSITIVE_INFINITY });
  console.log(shown.text);
  const choice = shown.matches
    ? await decide(mode)
    : { decision: 'deny' as const, reason: 'the arguments shown did not match their digest' };
  const approver = client.signingKeyId ? undefined : os.userInfo().username;
  const options = { approver, reason: choice.reason, argsDigest: decisionDigest(pending), round: pending.round };
  const receipt =
    choice.decision === 'approve'
      ? await client.approve(wait.workflowId, pending.callId, options)
      : await client.deny(wait.workflowId, pending.callId, options);
  console.log(forTerminal(`Decision accepted by ${wait.workflowId}: ${receipt.decision} ${receipt.callId}.`));
}

/**
 * Follows a tree of turns from its root until the root ends: prints the root's tool calls as they
 * end, and decides each approval the root's state lists below it (once per call and round).
 */
export async function followTree(client: TollgateClient, rootWorkflowId: string, mode: ApprovalMode): Promise<AgentTurnResult> {
  let ended = false;
  const result = client.result(rootWorkflowId).finally(() => {
    ended = true;
  });
  const decided = new Set<string>();
  let shownEvents = 0;
  while (!ended) {
    const state = await client.state(rootWorkflowId).catch(() => undefined);
    for (const event of state?.toolCalls.slice(shownEvents) ?? []) console.log(describeEvent(event));
    shownEvents = state?.toolCalls.length ?? shownEvents;
    for (const wait of state?.waitsBelow ?? []) {
      const key = `${wait.workflowId}/${wait.callId}/${wait.round}`;
      if (wait.kind !== 'approval' || decided.has(key)) continue;
      decided.add(key);
      await decideBelow(client, wait, mode);
    }
    await Promise.race([result.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, POLL_MS))]);
  }
  const final = await result;
  for (const event of final.toolCalls.slice(shownEvents)) console.log(describeEvent(event));
  return final;
}

/** The tree a finished root turn ran, printed: each delegate call's child with its workflow id, status, answer and tool calls. */
export async function printTree(client: TollgateClient, root: AgentTurnResult, rootWorkflowId: string): Promise<void> {
  console.log('\nTree:');
  console.log(forTerminal(`${root.agent?.name ?? 'default'}  ${rootWorkflowId}  ${root.status}`));
  const children = root.toolCalls.filter((event) => event.delegate);
  for (const [index, event] of children.entries()) {
    const { agent, workflowId, status } = event.delegate!;
    const branch = index === children.length - 1 ? '└─' : '├─';
    console.log(forTerminal(`${branch} ${agent}  ${workflowId}  ${status}  (call ${event.callId}: ${event.status})`));
    if (status === 'refused') continue;
    const child = await client.result(workflowId);
    const indent = index === children.length - 1 ? '   ' : '│  ';
    console.log(
      toolCallTable(child.toolCalls)
        .split('\n')
        .map((line) => `${indent}${line}`)
        .join('\n'),
    );
    console.log(`${indent}Answer of ${forTerminal(agent)}:`);
    console.log(
      forTerminal(child.answer ?? '(none)')
        .split('\n')
        .map((line) => `${indent}  ${line}`)
        .join('\n'),
    );
  }
}
