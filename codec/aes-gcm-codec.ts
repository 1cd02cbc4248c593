import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { UNDECRYPTABLE_ENCODING } from '../common/undecodable';
import { UNENCRYPTED_METADATA, type RequireEncrypted } from '../common/unencrypted';

/** The metadata encoding of a payload this codec encrypted. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** The metadata key naming the key a payload was encrypted with, so keys can rotate. */
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Keys by id, and the id that encrypts new payloads. */
export interface Keyring {
  currentKeyId: string;
  keys: Map<string, Buffer>;
}

/**
 * A keyring from text: `id:base64key` entries separated by commas, each key 32 bytes (AES-256).
 * The first entry encrypts; all of them decrypt, so old histories stay readable after a rotation.
 */
export function parseKeyring(text: string, source: string): Keyring {
  const keys = new Map<string, Buffer>();
  let currentKeyId: string | undefined;
  for (const entry of text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const separator = entry.indexOf(':');
    if (separator <= 0) throw new Error(`${source}: expected "keyId:base64key" entries separated by commas`);
    const id = entry.slice(0, separator);
    const key = Buffer.from(entry.slice(separator + 1), 'base64');
    if (key.length !== 32)
      throw new Error(`${source}: key "${id}" is ${key.length} bytes; AES-256-GCM needs 32 (base64 of 32 random bytes)`);
    keys.set(id, key);
    currentKeyId ??= id;
  }
  if (!currentKeyId) throw new Error(`${source}: no key given`);
  return { currentKeyId, keys };
}

/** How a codec treats what it decodes. */
export interface AesGcmCodecOptions {
  /**
   * Flags every payload that arrives unencrypted with this mode (metadata `tollgate-unencrypted`),
   * so that the workflow refuses what the mode covers. A worker's codec sets it; a client's does not.
   */
  markUnencrypted?: RequireEncrypted;
}

/** A PayloadCodec that encrypts every payload with AES-256-GCM, the key id in the payload's metadata. */
export class AesGcmCodec implements PayloadCodec {
  constructor(
    private readonly keyring: Keyring,
    private readonly options: AesGcmCodecOptions = {},
  ) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const key = this.keyring.keys.get(this.keyring.currentKeyId)!;
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { encoding: encoder.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: encoder.encode(this.keyring.currentKeyId) },
        data: sealed,
      };
    });
  }

  /**
   * Decrypts each payload that this codec encrypted. One that cannot be decrypted (a key this keyring
   * lacks, a broken seal) becomes a payload of encoding UNDECRYPTABLE_ENCODING carrying the reason,
   * instead of an error that would fail the whole batch: a message handler records it as rejected,
   * and every other decoder refuses it as an unknown encoding, as it would the sealed payload.
   */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding ? decoder.decode(payload.metadata.encoding) : undefined;
      if (encoding !== ENCRYPTED_ENCODING) return this.flagUnencrypted(payload);
      try {
        return this.open(payload);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        return { metadata: { encoding: encoder.encode(UNDECRYPTABLE_ENCODING) }, data: encoder.encode(reason) };
      }
    });
  }

  private open(payload: Payload): Payload {
    const keyId = payload.metadata?.[KEY_ID_METADATA] ? decoder.decode(payload.metadata[KEY_ID_METADATA]) : '';
    const key = this.keyring.keys.get(keyId);
    if (!key) throw new Error(`a payload is encrypted with key "${keyId.slice(0, 64)}", which this keyring does not hold`);
    const sealed = Buffer.from(payload.data ?? new Uint8Array());
    if (sealed.length < IV_BYTES + TAG_BYTES) throw new Error(`an encrypted payload of ${sealed.length} bytes is too short to be sealed`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
      return temporal.api.common.v1.Payload.decode(plain) as Payload;
    } catch {
      throw new Error(
        `an encrypted payload (key "${keyId.slice(0, 64)}") does not open: its seal is broken or it was not made with that key`,
      );
    }
  }

  private flagUnencrypted(payload: Payload): Payload {
    const mode = this.options.markUnencrypted;
    if (!mode) return payload;
    return { ...payload, metadata: { ...payload.metadata, [UNENCRYPTED_METADATA]: encoder.encode(mode) } };
  }
}

/** The codec the config asks for (`encryption.keysEnv` names the environment variable holding the keyring), or none. */
export function codecFromEnvironment(
  keysEnv: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  options: AesGcmCodecOptions = {},
): AesGcmCodec | undefined {
  if (!keysEnv) return undefined;
  const text = env[keysEnv];
  if (!text) throw new Error(`encryption.keysEnv: the environment variable ${keysEnv} is not set; it holds "keyId:base64key" entries`);
  return new AesGcmCodec(parseKeyring(text, keysEnv), options);
}

/**
 * The converters an encrypting worker and client use (`codec/converters.js`): failures keep their
 * message and stack trace in an encoded (so encrypted) payload, and values decoded from payloads
 * that arrived unencrypted carry a mark the workflow checks. Workflow bundles built for an
 * encrypting worker must be built with these paths too.
 */
export const ENCRYPTED_CONVERTER_PATHS = {
  payloadConverterPath: path.join(__dirname, 'converters.js'),
  failureConverterPath: path.join(__dirname, 'converters.js'),
} as const;
