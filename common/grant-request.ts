import type { GrantRequest } from './contract/decisions';

/** The longest a grant may last. */
export const MAX_GRANT_MS = 30 * 24 * 60 * 60 * 1000;

/** The most characters of JSON a grant's condition may have. */
export const MAX_GRANT_CONDITION_CHARS = 4_000;

/** A grant's duration and caps as given with an approval: why they cannot be recorded, or nothing. */
export function grantRequestProblem(grant: unknown): string | undefined {
  if (!grant || typeof grant !== 'object' || Array.isArray(grant)) return 'grant must be an object { forMs, when?, scope?, maxCalls? }';
  const { forMs, when, scope, maxCalls } = grant as Partial<GrantRequest>;
  if (typeof forMs !== 'number' || !Number.isInteger(forMs) || forMs < 1 || forMs > MAX_GRANT_MS)
    return `grant.forMs must be a whole number of milliseconds from 1 to ${MAX_GRANT_MS} (30 days)`;
  if (when !== undefined && (when === null || typeof when !== 'object' || Array.isArray(when)))
    return 'grant.when must be a JSON Schema object';
  if (when !== undefined && JSON.stringify(when).length > MAX_GRANT_CONDITION_CHARS)
    return `grant.when is longer than ${MAX_GRANT_CONDITION_CHARS} characters of JSON`;
  if (scope !== undefined && scope !== 'task' && scope !== 'conversation') return 'grant.scope must be "task" or "conversation"';
  if (maxCalls !== undefined && (typeof maxCalls !== 'number' || !Number.isInteger(maxCalls) || maxCalls < 1))
    return 'grant.maxCalls must be a whole number of at least 1';
  return undefined;
}
