// How a handoff is named where the model sees it: `transfer_to_<agent>`. Shared by the model step
// (which offers and checks these tools), the registry (which refuses a tool of the same name) and
// the workflow (which records the switch).

/** The prefix of every handoff tool's name. */
export const HANDOFF_TOOL_PREFIX = 'transfer_to_';

/** The name of the tool that hands the turn to `agent`. */
export function handoffToolName(agent: string): string {
  return `${HANDOFF_TOOL_PREFIX}${agent}`;
}

/** The agent a tool name hands the turn to, or undefined when the name is not a handoff's. */
export function handoffTargetOf(toolName: string): string | undefined {
  return toolName.startsWith(HANDOFF_TOOL_PREFIX) && toolName.length > HANDOFF_TOOL_PREFIX.length
    ? toolName.slice(HANDOFF_TOOL_PREFIX.length)
    : undefined;
}
