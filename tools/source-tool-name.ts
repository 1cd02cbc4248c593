import { sha256 } from './canonical-json';

/** The longest tool name the model providers accept (OpenAI and Anthropic: 64 characters of `[A-Za-z0-9_-]`). */
export const MAX_TOOL_NAME_CHARS = 64;

const ALLOWED = /[^A-Za-z0-9_-]/g;

/**
 * The name the model sees for a source's tool: `<server>__<tool>` (an MCP server's),
 * `<source>__<operationId>` (an HTTP API's). A name that had to be changed
 * (a character providers refuse, or too long) ends in a short hash of the full name, so two
 * different tools never end up with the same name.
 */
export function sourceToolName(server: string, tool: string): string {
  const full = `${server}__${tool}`;
  const clean = full.replace(ALLOWED, '_');
  if (clean === full && full.length <= MAX_TOOL_NAME_CHARS) return full;
  const suffix = `_${sha256(full).slice(0, 8)}`;
  return `${clean.slice(0, MAX_TOOL_NAME_CHARS - suffix.length)}${suffix}`;
}
