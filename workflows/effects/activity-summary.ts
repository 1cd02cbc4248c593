import type { CheckedToolCall } from '../../common/activity-types';

/**
 * The Web UI's line beside a call's activities: the call's summary (its tool and chosen fields,
 * redacted and marked), after the name of the agent that made it when the turn runs as one, so a
 * tree of turns, or a turn that handed off, shows whose call each one is.
 */
export function activitySummary(call: Pick<CheckedToolCall, 'summary' | 'tool' | 'agent'>): string {
  const line = call.summary ?? call.tool;
  return call.agent ? `${call.agent.name} · ${line}` : line;
}
