/**
 * Marks of payloads that reached a worker unencrypted while encryption is on. The worker's codec
 * adds {@link UNENCRYPTED_METADATA} to such a payload, and the payload converter of
 * `codec/converters.js` (which holds the same two names) puts {@link UNENCRYPTED_MARK} on the
 * value decoded from it.
 */

/** The payload metadata key; its value is the worker's `encryption.requireEncrypted` mode. */
export const UNENCRYPTED_METADATA = 'tollgate-unencrypted';

/** The non-enumerable property of a decoded object whose payload arrived unencrypted. */
export const UNENCRYPTED_MARK = Symbol.for('tollgate.unencrypted');

/** What `encryption.requireEncrypted` refuses: decisions only, or every input of a workflow. */
export type RequireEncrypted = 'decisions' | 'all';

/** The mode a value was marked with when its payload arrived unencrypted; nothing for an encrypted (or unmarked) one. */
export function unencryptedMode(value: unknown): RequireEncrypted | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const mode = (value as Record<symbol, unknown>)[UNENCRYPTED_MARK];
  return mode === 'decisions' || mode === 'all' ? mode : undefined;
}
