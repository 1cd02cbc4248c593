import { generateKeyPairSync } from 'node:crypto';
import { ED25519_BYTES } from './signed-decision';

/** An operator's signing key: its name (recorded as the approver) and its raw 32-byte Ed25519 private key. */
export interface ApproverSigningKey {
  keyId: string;
  privateKey: Uint8Array;
}

const KEY_NAME = /^[A-Za-z0-9._@-]{1,64}$/;

/** One `name:base64` entry, its key checked for length; errors name the variable and the entry. */
function parseEntry(entry: string, source: string, bytes: number, what: string): { name: string; key: Buffer } {
  const separator = entry.indexOf(':');
  if (separator <= 0)
    throw new Error(`${source}: expected "name:base64${what.replace(/ /g, '')}" entries, got ${JSON.stringify(entry.slice(0, 40))}`);
  const name = entry.slice(0, separator);
  if (!KEY_NAME.test(name))
    throw new Error(`${source}: key name ${JSON.stringify(name)} may hold only letters, digits, ".", "_", "@" and "-" (at most 64)`);
  const text = entry.slice(separator + 1).trim();
  const key = Buffer.from(text, 'base64');
  if (key.length !== bytes || key.toString('base64') !== text) {
    throw new Error(`${source}: key "${name}" is not base64 of a raw ${bytes}-byte Ed25519 ${what} (got ${key.length} bytes)`);
  }
  return { name, key };
}

/**
 * Approver public keys from text: `name:base64` entries separated by commas, each the raw 32-byte
 * Ed25519 public key in standard base64. Returns the keys in base64 by name.
 */
export function parseApproverPublicKeys(text: string, source: string): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const entry of text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const { name, key } = parseEntry(entry, source, ED25519_BYTES.publicKey, 'public key');
    if (Object.prototype.hasOwnProperty.call(keys, name)) throw new Error(`${source}: key name "${name}" is given twice`);
    keys[name] = key.toString('base64');
  }
  if (Object.keys(keys).length === 0)
    throw new Error(`${source}: no key given; expected "name:base64publickey" entries separated by commas`);
  return keys;
}

/** The public keys the worker's config names (`approvals.publicKeysEnv`), or none when it names no variable. */
export function approverPublicKeysFromEnvironment(
  publicKeysEnv: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> | undefined {
  if (!publicKeysEnv) return undefined;
  const text = env[publicKeysEnv];
  if (!text?.trim())
    throw new Error(
      `approvals.publicKeysEnv: the environment variable ${publicKeysEnv} is not set; it holds "name:base64publickey" entries`,
    );
  return parseApproverPublicKeys(text, publicKeysEnv);
}

/** An operator's signing key from text: one `name:base64` entry, the raw 32-byte Ed25519 private key. */
export function parseApproverSigningKey(text: string, source: string): ApproverSigningKey {
  const entries = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (entries.length !== 1) throw new Error(`${source}: expected one "name:base64privatekey" entry, got ${entries.length}`);
  const { name, key } = parseEntry(entries[0], source, ED25519_BYTES.privateKey, 'private key');
  return { keyId: name, privateKey: new Uint8Array(key) };
}

/** The signing key the client's config names (`approvals.privateKeyEnv`), or none when it names no variable. */
export function approverSigningKeyFromEnvironment(
  privateKeyEnv: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ApproverSigningKey | undefined {
  if (!privateKeyEnv) return undefined;
  const text = env[privateKeyEnv];
  if (!text?.trim())
    throw new Error(
      `approvals.privateKeyEnv: the environment variable ${privateKeyEnv} is not set; it holds one "name:base64privatekey" entry`,
    );
  return parseApproverSigningKey(text, privateKeyEnv);
}

/** A new approver key pair, as the two environment entries: the worker's public one and the operator's private one. */
export function generateApproverKeyPair(name: string): { publicEntry: string; privateEntry: string } {
  if (!KEY_NAME.test(name))
    throw new Error(`key name ${JSON.stringify(name)} may hold only letters, digits, ".", "_", "@" and "-" (at most 64)`);
  const { privateKey } = generateKeyPairSync('ed25519');
  // The JWK form holds both raw keys: `d` the 32-byte private key, `x` the 32-byte public key.
  const { d, x } = privateKey.export({ format: 'jwk' });
  const raw = (base64url: string | undefined) => Buffer.from(base64url!, 'base64url').toString('base64');
  return { publicEntry: `${name}:${raw(x)}`, privateEntry: `${name}:${raw(d)}` };
}
