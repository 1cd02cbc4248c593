// What the inbox page computes itself, in the browser, so that the server it talks to cannot decide
// for a person: the digest of the arguments it shows, and the Ed25519 signature of a decision, made
// with a key that never leaves the browser. Every function here gives what the worker computes
// (tools/canonical-json.ts, common/signed-decision.ts); test/unit/inbox-decisions.test.ts checks so.

/** JSON with object keys sorted at every level, so equal values always give equal text. */
export function canonicalJson(value) {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value)
    .filter(([, item]) => item !== undefined)
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
}

function hex(bytes) {
  return [...new Uint8Array(bytes)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** SHA-256 of a text's UTF-8, in hex. */
export async function sha256(text) {
  return hex(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

/** The text display parts stand for: plain runs as they are, each mark as the character it marks. */
export function partsText(parts) {
  return parts.map((part) => (typeof part === 'string' ? part : String.fromCodePoint(part.codePoint))).join('');
}

/**
 * The value a display node of the arguments stands for (common/display-text.ts, `valueOfDisplay`):
 * what the page rendered, part by part, so a digest of it is a digest of what the person was shown.
 * A part nested too deep to be shown gives no value: nothing can be approved from this view.
 */
export function valueOfShown(node) {
  switch (node.kind) {
    case 'json':
      return JSON.parse(partsText(node.parts));
    case 'text':
      return partsText(node.parts);
    case 'list':
      return node.items.map(valueOfShown);
    case 'fields':
      return Object.fromEntries(node.fields.map((field) => [partsText(field.key), valueOfShown(field.value)]));
    default:
      throw new Error('part of the arguments is nested too deep to be shown here');
  }
}

/** The digest an approval names: of the arguments, bound to the tool's definition when a source describes it. */
export function approvalDigest(args, definitionDigest) {
  return sha256(canonicalJson(definitionDigest ? { args, definitionDigest } : args));
}

const SIGNED_FIELD_ORDER = ['approver', 'argsDigest', 'callId', 'decision', 'editedArgsDigest', 'grant', 'round', 'signedAt', 'workflowId'];

/** The text a decision's signature covers: the signed fields, sorted by name, each a JSON string. */
export function decisionSigningText(fields) {
  const present = SIGNED_FIELD_ORDER.filter(
    (name) =>
      (name !== 'editedArgsDigest' || fields.editedArgsDigest !== undefined) &&
      (name !== 'grant' || fields.grant !== undefined) &&
      (name !== 'round' || (fields.round ?? 1) > 1),
  );
  return `{${present.map((name) => `${JSON.stringify(name)}:${JSON.stringify(String(fields[name]))}`).join(',')}}`;
}

/** Standard, padded base64 of bytes. */
export function bytesBase64(bytes) {
  let binary = '';
  for (const byte of new Uint8Array(bytes)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** The base64 Ed25519 signature of a decision's fields by a WebCrypto private key. */
export async function signDecision(fields, privateKey) {
  const signature = await crypto.subtle.sign('Ed25519', privateKey, new TextEncoder().encode(decisionSigningText(fields)));
  return bytesBase64(signature);
}

/** The raw public key of a key pair, as the `name:base64` entry a worker's approver keys take. */
export async function publicEntry(name, publicKey) {
  return `${name}:${bytesBase64(await crypto.subtle.exportKey('raw', publicKey))}`;
}

/** A new Ed25519 key pair whose private key cannot be exported, not even by this page. */
export function generateSigningKey() {
  return crypto.subtle.generateKey('Ed25519', false, ['sign', 'verify']);
}

const PKCS8_ED25519_PREFIX = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];

/**
 * An existing private entry (`name:base64` of the raw 32-byte seed, as `tollgate keys generate`
 * prints it) imported once as a key that cannot be exported again; its public key is derived by
 * signing nothing: WebCrypto has no derivation, so the caller gives the public entry too and it is
 * checked by a test signature.
 */
export async function importSigningKey(privateEntry, publicEntryText) {
  const [name, seed] = splitEntry(privateEntry, 'the private key');
  const [publicName, publicBase64] = splitEntry(publicEntryText, 'the public key');
  if (publicName !== name) throw new Error(`the public key is named "${publicName}", the private one "${name}"`);
  const raw = base64ToBytes(seed);
  if (raw.length !== 32) throw new Error('the private key must be 32 bytes of standard base64 (the seed)');
  const pkcs8 = new Uint8Array([...PKCS8_ED25519_PREFIX, ...raw]);
  const privateKey = await crypto.subtle.importKey('pkcs8', pkcs8, 'Ed25519', false, ['sign']);
  const publicKey = await crypto.subtle.importKey('raw', base64ToBytes(publicBase64), 'Ed25519', true, ['verify']);
  const probe = new TextEncoder().encode('tollgate inbox key check');
  const signature = await crypto.subtle.sign('Ed25519', privateKey, probe);
  if (!(await crypto.subtle.verify('Ed25519', publicKey, signature, probe)))
    throw new Error('the public key is not that of the private key');
  raw.fill(0);
  return { name, privateKey, publicKey };
}

function splitEntry(entry, what) {
  const at = entry.trim().indexOf(':');
  if (at <= 0) throw new Error(`${what} must be a "name:base64" entry`);
  return [entry.trim().slice(0, at), entry.trim().slice(at + 1)];
}

function base64ToBytes(text) {
  const binary = atob(text);
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

const DATABASE = 'tollgate-inbox';
const STORE = 'keys';

function database() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** The signing key kept in this browser for an approver (CryptoKey objects are stored as they are, never as bytes). */
export async function loadSigningKey(approver) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const request = db.transaction(STORE).objectStore(STORE).get(approver);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Keeps an approver's signing key in this browser. */
export async function saveSigningKey(approver, key) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const transaction = db.transaction(STORE, 'readwrite');
    transaction.objectStore(STORE).put(key, approver);
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
  });
}
