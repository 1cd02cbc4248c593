import {
  rawValueTypeInfo,
  type Payload,
  type QueryDefinition,
  type SignalDefinition,
  type TypeInfo,
  type UpdateDefinition,
} from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH } from '../common/defaults';
import { UNDECRYPTABLE_ENCODING } from '../common/undecodable';
import { UNENCRYPTED_MARK, UNENCRYPTED_METADATA } from '../common/unencrypted';

/**
 * Every argument of a message handler as its raw payload, whatever the count: the SDK then hands
 * the handler a RawValue instead of decoding it inside the activation, where a payload that does not
 * decode (malformed JSON, an unknown encoding) would fail the workflow task on every retry.
 */
const RAW_ARGUMENTS = new Proxy<readonly TypeInfo[]>([], {
  get: (target, key) => (typeof key === 'string' && /^\d+$/.test(key) ? rawValueTypeInfo : Reflect.get(target, key)),
});

/** A signal of the workflow's side, by name, whose handler takes its payloads raw (see {@link decodeMessage}). */
export function rawSignal(name: string): SignalDefinition<[unknown]> {
  return defineSignal<[unknown]>(name, { typeInfo: { inputTypes: RAW_ARGUMENTS } });
}

/** An update of the workflow's side, by name, whose validator and handler take their payloads raw (see {@link decodeMessage}). */
export function rawUpdate<Result>(name: string): UpdateDefinition<Result, [unknown]> {
  return defineUpdate<Result, [unknown]>(name, { typeInfo: { inputTypes: RAW_ARGUMENTS } });
}

/** A message's payload decoded, or why it could not be (with what is known of it, for the record). */
export type DecodedMessage =
  { decoded: true; value: unknown } | { decoded: false; why: string; payload: { encoding: string; bytes: number } };

const ENCODING_CHARS = 40;

function clip(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

function utf8(bytes: Uint8Array | null | undefined): string | undefined {
  if (!bytes) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** How deep the arrays and objects of a JSON text nest (strings skipped), stopping once past `limit`. */
function nesting(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c) index++;
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b || char === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (char === 0x5d || char === 0x7d) depth--;
  }
  return deepest;
}

/**
 * The value of a message handler's raw argument, decoded by the workflow itself with nothing that
 * can throw: JSON only (`json/plain`; `binary/null` is the value undefined), at most
 * MAX_MESSAGE_BYTES and MAX_MESSAGE_DEPTH levels, UTF-8. A payload the worker's codec could not
 * decrypt arrives marked as such. Anything else comes back as why, for the turn to record as a
 * rejected decision; the turn goes on either way. A value from a payload that arrived unencrypted
 * while encryption is on carries UNENCRYPTED_MARK, as the payload converter would put it.
 */
export function decodeMessage(raw: unknown): DecodedMessage {
  const payload = raw !== null && typeof raw === 'object' ? ((raw as { payload?: Payload }).payload ?? undefined) : undefined;
  const bytes = payload?.data?.length ?? 0;
  const encodingBytes = payload?.metadata?.encoding;
  const encoding = utf8(encodingBytes) ?? (encodingBytes ? 'not UTF-8' : 'none');
  const refuse = (why: string): DecodedMessage => ({
    decoded: false,
    why,
    payload: { encoding: clip(encoding, ENCODING_CHARS), bytes },
  });
  if (!payload) return refuse('the message has no payload');
  if (encoding === 'binary/null') return { decoded: true, value: undefined };
  if (encoding === UNDECRYPTABLE_ENCODING) {
    const reason = utf8(payload.data) ?? 'no reason given';
    return refuse(`the payload could not be decrypted by this worker: ${clip(reason, 200)}`);
  }
  if (encoding !== 'json/plain') {
    return refuse(`the payload's encoding ${JSON.stringify(clip(encoding, ENCODING_CHARS))} is not json/plain`);
  }
  if (bytes > MAX_MESSAGE_BYTES) return refuse(`the payload is ${bytes} bytes; at most ${MAX_MESSAGE_BYTES} are taken`);
  const text = utf8(payload.data ?? new Uint8Array());
  if (text === undefined) return refuse('the payload is not UTF-8 text');
  const depth = nesting(text, MAX_MESSAGE_DEPTH);
  if (depth > MAX_MESSAGE_DEPTH) return refuse(`the payload nests deeper than ${MAX_MESSAGE_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return refuse(`the payload is not JSON: ${clip(error instanceof Error ? error.message : String(error), 120)}`);
  }
  const flag = utf8(payload.metadata?.[UNENCRYPTED_METADATA]);
  if (flag && value !== null && typeof value === 'object') {
    Object.defineProperty(value, UNENCRYPTED_MARK, { value: flag, enumerable: false });
  }
  return { decoded: true, value };
}

/** A query of the workflow's side, by name, whose arguments (if a caller sends any) stay raw and undecoded. */
export function rawQuery<Result>(name: string): QueryDefinition<Result, [unknown]> {
  return defineQuery<Result, [unknown]>(name, { typeInfo: { inputTypes: RAW_ARGUMENTS } });
}

/**
 * The value of an update's raw argument, for its validator: an undecodable payload is refused to the
 * caller with why (named after the update), before the update is accepted, so it leaves no event.
 */
export function decodedOrRefused(raw: unknown, updateName?: string): unknown {
  const message = decodeMessage(raw);
  if (!message.decoded) throw new Error(updateName ? `${updateName}: ${message.why}` : message.why);
  return message.value;
}

/** The value of an accepted update's raw argument (its validator decoded the same payload already). */
export function decodedValue(raw: unknown): unknown {
  const message = decodeMessage(raw);
  return message.decoded ? message.value : undefined;
}
