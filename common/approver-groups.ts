/**
 * Who may decide on a tool's calls (config `approvals.groups`): tool names, or patterns with `*`
 * (any run of characters, so `files__*` covers an MCP server's tools), each with the approvers who
 * may approve, deny or resolve its calls. The turn enforces it with the settings it started with;
 * a tool no entry names may be decided by any approver. Pure: it runs in workflow code.
 */
export type ApproverGroups = Record<string, string[]>;

/** Whether a tool name matches an entry's name or `*` pattern (compared character by character; no regular expression is built). */
export function toolMatches(pattern: string, tool: string): boolean {
  if (!pattern.includes('*')) return pattern === tool;
  const parts = pattern.split('*');
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (!tool.startsWith(first) || tool.length < first.length + last.length || !tool.endsWith(last)) return false;
  let at = first.length;
  const end = tool.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = tool.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** The approvers who may decide on a tool's calls: its own entry, else the first pattern that matches; none when no entry does (anyone may). */
export function approversOf(groups: ApproverGroups | undefined, tool: string): string[] | undefined {
  if (!groups) return undefined;
  if (Object.prototype.hasOwnProperty.call(groups, tool)) return groups[tool];
  const pattern = Object.keys(groups).find((name) => name.includes('*') && toolMatches(name, tool));
  return pattern === undefined ? undefined : groups[pattern];
}

/** Why a decider may not decide on a tool's calls, or nothing when they may. */
export function groupProblem(groups: ApproverGroups | undefined, tool: string, decider: unknown): string | undefined {
  const allowed = approversOf(groups, tool);
  if (allowed === undefined) return undefined;
  const list = allowed.length === 0 ? 'nobody (an empty group)' : allowed.join(', ');
  if (typeof decider !== 'string' || decider === '') {
    return `calls of ${tool} may be decided only by ${list} (approvals.groups); the decision names no approver`;
  }
  return allowed.includes(decider) ? undefined : `${decider} may not decide on calls of ${tool}: only ${list} may (approvals.groups)`;
}
