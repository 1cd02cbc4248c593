import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level, so equal values always give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
}

/** SHA-256 of a text, in hex. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The digest an approval names: SHA-256 of the arguments' canonical JSON. */
export function argsDigest(args: unknown): string {
  return sha256(canonicalJson(args));
}

/**
 * The digest an approval names: that of the arguments, bound to the tool's definition when the
 * tool comes from elsewhere (an MCP server), so a tool changed after a person approved needs a new
 * approval. Workers and clients compute it the same way.
 */
export function approvalDigest(args: unknown, definitionDigest?: string): string {
  return definitionDigest ? argsDigest({ args, definitionDigest }) : argsDigest(args);
}
