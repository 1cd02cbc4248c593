import { signatureVerifies, signBytes } from './signed-decision';

/**
 * Stand-ins (docs/approvals.md, "Who is told"): an approver names someone who may decide in their
 * place for a period, by a statement signed with the approver's own key. A turn takes a decision by
 * the stand-in where the approver could have decided, in that period by the turn's clock, and records
 * both names. Pure: it runs in workflow code, in the CLI and on the worker alike.
 */

/** One statement: `approver` lets `standIn` decide in their place from `from` until `until`, signed by the approver's key. */
export interface StandInStatement {
  approver: string;
  standIn: string;
  /** ISO 8601 UTC times, as `Date.prototype.toISOString` writes them. */
  from: string;
  until: string;
  /** Standard base64 of the Ed25519 signature by the approver's key over {@link standInSigningText}. */
  signature: string;
}

/** The most statements a turn reads (the newest are kept). */
export const MAX_STAND_INS = 200;

const KEY_NAME = /^[A-Za-z0-9._@-]{1,64}$/;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * The text an approver signs: compact JSON of the four fields and `"statement":"stand-in"`, keys
 * sorted by name, every value a string. No decision's signed text has a `statement` key, so a
 * statement can never pass for a decision, nor the other way round.
 */
export function standInSigningText({ approver, standIn, from, until }: Omit<StandInStatement, 'signature'>): string {
  const fields: Array<[string, string]> = [
    ['approver', approver],
    ['from', from],
    ['standIn', standIn],
    ['statement', 'stand-in'],
    ['until', until],
  ];
  return `{${fields.map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)}`).join(',')}}`;
}

/** Signs a statement with the approver's raw 32-byte Ed25519 private key. */
export function signStandIn(fields: Omit<StandInStatement, 'signature'>, privateKey: Uint8Array): StandInStatement {
  return { ...fields, signature: signBytes(new TextEncoder().encode(standInSigningText(fields)), privateKey) };
}

/** Why a statement is not one a turn takes (its shape, its period, its signature by the approver's key), or nothing. */
export function standInProblem(statement: unknown, publicKeys: Record<string, string>): string | undefined {
  if (!statement || typeof statement !== 'object')
    return 'a stand-in statement must be an object { approver, standIn, from, until, signature }';
  const { approver, standIn, from, until, signature } = statement as Partial<StandInStatement>;
  for (const [name, value] of [
    ['approver', approver],
    ['standIn', standIn],
  ] as const)
    if (typeof value !== 'string' || !KEY_NAME.test(value)) return `${name} must be an approver key name`;
  if (approver === standIn) return `${approver} cannot stand in for themselves`;
  for (const [name, value] of [
    ['from', from],
    ['until', until],
  ] as const)
    if (typeof value !== 'string' || !ISO_UTC.test(value) || Number.isNaN(Date.parse(value)))
      return `${name} must be an ISO 8601 UTC time such as 2026-01-01T12:00:00.000Z`;
  if (Date.parse(from!) >= Date.parse(until!)) return 'until must be later than from';
  if (!Object.prototype.hasOwnProperty.call(publicKeys, approver!)) return `approver "${approver}" is not an approver key of this worker`;
  if (typeof signature !== 'string') return "signature must be the base64 of the approver key's Ed25519 signature";
  const bytes = new TextEncoder().encode(standInSigningText({ approver: approver!, standIn: standIn!, from: from!, until: until! }));
  return signatureVerifies(signature, bytes, publicKeys[approver!]) ? undefined : `the signature does not verify with key "${approver}"`;
}

/**
 * For whom `decider` may decide now as a stand-in: the approver of the first statement naming them
 * that verifies, whose period holds `now`, and whose approver `mayDecide` on the call; nothing when none does.
 */
export function standingFor({
  statements,
  publicKeys,
  decider,
  mayDecide,
  now,
}: {
  statements: readonly StandInStatement[];
  publicKeys: Record<string, string>;
  decider: string;
  mayDecide: (approver: string) => boolean;
  now: number;
}): string | undefined {
  const found = statements.find(
    (statement) =>
      statement.standIn === decider &&
      Date.parse(statement.from) <= now &&
      now < Date.parse(statement.until) &&
      standInProblem(statement, publicKeys) === undefined &&
      mayDecide(statement.approver),
  );
  return found?.approver;
}
