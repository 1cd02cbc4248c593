import { createHash } from 'node:crypto';
import { canonicalJson } from '../common/canonical-json';

export { canonicalJson };

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
