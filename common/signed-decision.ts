/**
 * Signed decisions (see docs/approvals.md). This module runs in workflow code as well as in
 * clients: pure JavaScript, no Node built-ins, the same answer on every replay.
 */

import { canonicalJson } from './canonical-json';

type Curve = (typeof import('@noble/curves/ed25519'))['ed25519'];
let loadedCurve: Curve | undefined;

/**
 * Ed25519, loaded on first use. Each turn evaluates the workflow code's modules anew, and
 * evaluating the curve's (its field constants) cost every turn CPU time, although most turns
 * never check a signature.
 */
function ed25519(): Curve {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  loadedCurve ??= (require('@noble/curves/ed25519') as typeof import('@noble/curves/ed25519')).ed25519;
  return loadedCurve;
}

/** The fields an approver's Ed25519 signature covers; every one is a string. */
export interface SignedDecisionFields<Verdict extends SignedVerdict = 'approve' | 'deny'> {
  callId: string;
  /** An approval's `approve` or `deny`, or (with `SignedVerdict`) a resolution's `applied` or `not_applied`. */
  decision: Verdict;
  argsDigest: string;
  /** The name of the signing key; the turn records it as the approver. */
  approver: string;
  /** When it was signed, as an ISO 8601 UTC time with a `Z` (what `Date.prototype.toISOString` writes). */
  signedAt: string;
  /** The turn decided on, so that a signature cannot be replayed against another turn. */
  workflowId: string;
  /**
   * An approval with edited arguments: the digest of the arguments it approves instead (what the
   * call runs with). Only then is it part of the signed text, between `decision` and `signedAt`.
   */
  editedArgsDigest?: string;
  /**
   * The wait decided on, when the call (or step) waits for the second time or later (`round` of the
   * pending entry): then it is part of the signed text, as a decimal string between `editedArgsDigest`
   * and `signedAt`, so that a signature made for one wait never counts for another. Round 1 leaves it out.
   */
  round?: number;
  /**
   * An approval that gives a standing grant: the grant's canonical JSON (keys sorted at every level).
   * Only then is it part of the signed text, between `editedArgsDigest` and `round`.
   */
  grant?: string;
}

/**
 * What a signature may vouch for: an approval's decision, a resolution's outcome or a resume
 * decision (they never look alike, so one cannot pass for another).
 */
export type SignedVerdict = 'approve' | 'deny' | 'applied' | 'not_applied' | 'retry' | 'stop';

/** The fields in the order the signed text lists them: sorted by name. */
const SIGNED_FIELD_ORDER = [
  'approver',
  'argsDigest',
  'callId',
  'decision',
  'editedArgsDigest',
  'grant',
  'round',
  'signedAt',
  'workflowId',
] as const;

/**
 * The `callId` and `argsDigest` a signed `resume` decision covers: the step's name (`resume:<step>`,
 * which no tool call id looks like) and the empty digest (a resume runs no tool; the step and round
 * name the wait).
 */
export function resumeSigningSubject(step: number): { callId: string; argsDigest: string } {
  return { callId: `resume:${step}`, argsDigest: '' };
}

/** How far ahead of the turn's clock a `signedAt` may be (clocks of clients and servers differ a little). */
export const SIGNED_AT_MAX_AHEAD_MS = 2 * 60 * 1000;

/** Ed25519 sizes: raw public and private keys, and signatures, in bytes. */
export const ED25519_BYTES = { publicKey: 32, privateKey: 32, signature: 64 } as const;

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * The text an approver signs: compact JSON of the six fields with keys sorted by name (the RFC 8785
 * form, since every value is a string), e.g. `{"approver":"alice","argsDigest":"…","callId":"call-0-0",
 * "decision":"approve","signedAt":"2026-01-01T12:00:00.000Z","workflowId":"turn-…"}`, signed as UTF-8.
 */
export function decisionSigningText(fields: SignedDecisionFields<SignedVerdict>): string {
  const present = SIGNED_FIELD_ORDER.filter(
    (name) =>
      (name !== 'editedArgsDigest' || fields.editedArgsDigest !== undefined) &&
      (name !== 'grant' || fields.grant !== undefined) &&
      (name !== 'round' || (fields.round ?? 1) > 1),
  );
  return `{${present.map((name) => `${JSON.stringify(name)}:${JSON.stringify(String(fields[name]))}`).join(',')}}`;
}

/** The bytes an approver signs: the UTF-8 of {@link decisionSigningText}. */
export function decisionSigningBytes(fields: SignedDecisionFields<SignedVerdict>): Uint8Array {
  return new TextEncoder().encode(decisionSigningText(fields));
}

/**
 * The bytes of standard, padded base64, or undefined when the text is not that. Strict: the unused
 * low bits of the last character must be zero, so that each byte string has exactly one text (a
 * text that does not re-encode to itself is refused, and no two texts name one signature).
 */
export function base64Bytes(text: string): Uint8Array | undefined {
  if (!BASE64.test(text)) return undefined;
  const bytes = looseBase64Bytes(text);
  return bytesBase64(bytes) === text ? bytes : undefined;
}

function looseBase64Bytes(text: string): Uint8Array {
  const bytes: number[] = [];
  let bits = 0;
  let value = 0;
  for (const char of text.replace(/=+$/, '')) {
    value = (value << 6) | BASE64_ALPHABET.indexOf(char);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((value >> bits) & 0xff);
    }
  }
  return Uint8Array.from(bytes);
}

/** Standard, padded base64 of bytes. */
export function bytesBase64(bytes: Uint8Array): string {
  let text = '';
  for (let index = 0; index < bytes.length; index += 3) {
    const chunk = (bytes[index] << 16) | ((bytes[index + 1] ?? 0) << 8) | (bytes[index + 2] ?? 0);
    const chars = [18, 12, 6, 0].map((shift) => BASE64_ALPHABET[(chunk >> shift) & 63]);
    const kept = Math.min(4, bytes.length - index + 1);
    text += chars.slice(0, kept).join('') + '='.repeat(4 - kept);
  }
  return text;
}

/** The Ed25519 signature, in base64, of a decision's fields by a raw 32-byte private key. */
export function signDecisionFields(fields: SignedDecisionFields<SignedVerdict>, privateKey: Uint8Array): string {
  return bytesBase64(ed25519().sign(decisionSigningBytes(fields), privateKey));
}

/** The Ed25519 signature, in standard base64, of any signed text's bytes (a stand-in's statement) by a raw 32-byte private key. */
export function signBytes(bytes: Uint8Array, privateKey: Uint8Array): string {
  return bytesBase64(ed25519().sign(bytes, privateKey));
}

/** Whether a signature (strict standard base64 of 64 bytes) over the bytes verifies with a public key (base64), by strict RFC 8032. */
export function signatureVerifies(signature: string, bytes: Uint8Array, publicKey: string): boolean {
  const signatureBytes = base64Bytes(signature);
  if (signatureBytes?.length !== ED25519_BYTES.signature) return false;
  return verifies(signatureBytes, bytes, looseBase64Bytes(publicKey));
}

/** The raw public key of a raw 32-byte Ed25519 private key. */
export function publicKeyOf(privateKey: Uint8Array): Uint8Array {
  return ed25519().getPublicKey(privateKey);
}

/** What a turn needs to check a signed decision: its approvers' public keys, its id and its clock. */
export interface SignatureCheck {
  /** Raw public keys in base64, by key name. */
  publicKeys: Record<string, string>;
  workflowId: string;
  now: number;
  maxAgeMs: number;
}

/** The signature parts of a decision as sent: anything, until checked. */
export interface SignatureParts {
  callId: string;
  decision: SignedVerdict;
  argsDigest: string;
  approver?: unknown;
  keyId?: unknown;
  signedAt?: unknown;
  signature?: unknown;
  /** An approval with edited arguments: their digest, which the signature covers too. */
  editedArgsDigest?: string;
  /** The wait decided on, from its second round on (the signature covers it then). */
  round?: number;
  /** An approval that gives a grant: the grant, whose canonical JSON the signature covers too. */
  grant?: unknown;
}

const SIGNED_FIELDS_TEXT = '{ callId, decision, argsDigest, approver, signedAt, workflowId }';

/** Strict RFC 8032 verification, so that what verifies here verifies with any other Ed25519 library; false on malformed keys. */
function verifies(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed25519().verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)} s`;
}

/** Why a decision's signature does not authenticate it, or nothing when it does. */
export function signatureProblem(parts: SignatureParts, check: SignatureCheck): string | undefined {
  const { keyId, signedAt, signature, approver } = parts;
  if (keyId === undefined && signedAt === undefined && signature === undefined) {
    const needed = '(keyId, signedAt, signature; see docs/approvals.md)';
    return `the decision is unsigned: this worker takes only decisions signed by an approver key ${needed}`;
  }
  if (typeof keyId !== 'string' || keyId === '') return 'keyId must name the approver key that signed the decision';
  if (!Object.prototype.hasOwnProperty.call(check.publicKeys, keyId)) {
    const known = Object.keys(check.publicKeys).join(', ');
    return `keyId "${keyId}" is not an approver key of this worker (approvals.publicKeysEnv names ${known})`;
  }
  if (approver !== undefined && approver !== keyId) {
    const rule = "a signed decision's approver is its key's name (leave it out or send the same)";
    return `approver ${JSON.stringify(approver)} differs from keyId "${keyId}": ${rule}`;
  }
  if (typeof signedAt !== 'string' || !ISO_UTC.test(signedAt) || Number.isNaN(Date.parse(signedAt))) {
    return 'signedAt must be an ISO 8601 UTC time such as 2026-01-01T12:00:00.000Z';
  }
  const age = check.now - Date.parse(signedAt);
  if (-age > SIGNED_AT_MAX_AHEAD_MS) {
    return `signedAt ${signedAt} is ${seconds(-age)} ahead of the turn's clock (at most ${seconds(SIGNED_AT_MAX_AHEAD_MS)})`;
  }
  if (age > check.maxAgeMs) {
    return `signedAt ${signedAt} is ${seconds(age)} old, older than approvals.signatureMaxAge (${seconds(check.maxAgeMs)})`;
  }
  const signatureBytes = typeof signature === 'string' ? base64Bytes(signature) : undefined;
  if (signatureBytes?.length !== ED25519_BYTES.signature) {
    return `signature must be base64 of the ${ED25519_BYTES.signature}-byte Ed25519 signature`;
  }
  const { callId, decision, argsDigest, editedArgsDigest, round, grant } = parts;
  const fields: SignedDecisionFields<SignedVerdict> = {
    callId,
    decision,
    argsDigest,
    approver: keyId,
    signedAt,
    workflowId: check.workflowId,
    ...(editedArgsDigest !== undefined ? { editedArgsDigest } : {}),
    ...(round !== undefined && round > 1 ? { round } : {}),
    ...(grant !== undefined ? { grant: canonicalJson(grant) } : {}),
  };
  const publicKey = looseBase64Bytes(check.publicKeys[keyId]);
  if (!verifies(signatureBytes, decisionSigningBytes(fields), publicKey)) {
    const edited = `${editedArgsDigest !== undefined ? ' with editedArgsDigest' : ''}${grant !== undefined ? ' with the grant' : ''}`;
    const inRound = round !== undefined && round > 1 ? ` and round ${round}` : '';
    return `signature does not verify with key "${keyId}" over ${SIGNED_FIELDS_TEXT}${edited}${inRound} of this turn`;
  }
  return undefined;
}
