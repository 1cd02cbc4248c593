import { displayText } from '../../common/display-text';
import type { AgentTurnInput } from '../../common/contract/turn';

/** At most this many characters of the request go into a child turn's one-line summary. */
export const CHILD_SUMMARY_REQUEST_CHARS = 120;

/** At most this many characters of the request go into a child turn's details. */
export const CHILD_DETAILS_REQUEST_CHARS = 2_000;

/** The request on one line, hidden characters marked as every surface marks them, bounded. */
function oneLine(request: string, chars: number): string {
  const line = displayText(request.replace(/\s+/g, ' ').trim());
  return line.length > chars ? `${line.slice(0, chars - 1)}…` : line;
}

/**
 * What the Temporal Web UI shows of a subagent's child turn (`staticSummary` and `staticDetails` of
 * its start options): the agent and the request that led there, one line; and in the details the
 * path of agents, the parent's turn and call, and the request, in a fenced block no text breaks out
 * of. The request is the parent's model's text: its hidden characters are marked, backticks escaped.
 */
export function childSummary({
  agent,
  request,
  path,
  parentWorkflowId,
  parentCallId,
}: {
  agent: string;
  request: string;
  /** Agent names from the root's agent down to the child's. */
  path: string[];
  parentWorkflowId: string;
  parentCallId: string;
}): { staticSummary: string; staticDetails: string } {
  const whole = displayText(request).replace(/`/g, '\\u0060');
  const shown =
    whole.length <= CHILD_DETAILS_REQUEST_CHARS
      ? whole
      : `${whole.slice(0, CHILD_DETAILS_REQUEST_CHARS)}\n… ${whole.length - CHILD_DETAILS_REQUEST_CHARS} more characters`;
  const name = (text: string) => displayText(text).replace(/[`*_|[\]\\]/g, '\\$&');
  return {
    staticSummary: `agent ${agent}: ${oneLine(request, CHILD_SUMMARY_REQUEST_CHARS)}`,
    staticDetails: [
      `**Agent** ${name(agent)} · asked by call ${name(parentCallId)} of ${name(parentWorkflowId)}`,
      '',
      `**Path** ${path.map(name).join(' → ')}`,
      '',
      '**Request**',
      '',
      '```text',
      shown,
      '```',
    ].join('\n'),
  };
}

/** The summary and details of a child turn from its input (its agent and lineage); none for a turn without lineage. */
export function childSummaryOf(input: AgentTurnInput): { staticSummary?: string; staticDetails?: string } {
  const { lineage, agent } = input;
  if (!lineage) return agent ? { staticSummary: `agent ${agent}` } : {};
  const { request, path, parentWorkflowId, parentCallId } = lineage;
  return childSummary({ agent: agent ?? 'default', request, path, parentWorkflowId, parentCallId });
}
