'use strict';
// The payload and failure converters of an encrypting worker and client. Temporal loads them by
// path, both into the workflow bundle and with require() in the worker and the client, so this file
// is plain CommonJS that runs without a TypeScript loader.
const { DefaultFailureConverter, DefaultPayloadConverter } = require('@temporalio/common');

/** Metadata key the worker's codec adds to a payload that arrived unencrypted; its value is `encryption.requireEncrypted`. */
const UNENCRYPTED_METADATA = 'tollgate-unencrypted';
/** The symbol (global registry) carried by a decoded object whose payload arrived unencrypted; its value is the mode. */
const UNENCRYPTED_MARK = Symbol.for('tollgate.unencrypted');

function text(bytes) {
  let result = '';
  for (const byte of bytes) result += String.fromCharCode(byte);
  return result;
}

/**
 * Temporal's default payload converter, plus one thing: a value decoded from a payload the codec
 * flagged as unencrypted carries UNENCRYPTED_MARK, a property JSON never shows, so the workflow
 * can refuse it deterministically (the flag comes from the payload in the history).
 */
class MarkingPayloadConverter {
  constructor() {
    this.inner = new DefaultPayloadConverter();
  }

  toPayload(value, ...rest) {
    return this.inner.toPayload(value, ...rest);
  }

  fromPayload(payload, ...rest) {
    const value = this.inner.fromPayload(payload, ...rest);
    const flag = payload.metadata ? payload.metadata[UNENCRYPTED_METADATA] : undefined;
    if (flag && value !== null && typeof value === 'object') {
      Object.defineProperty(value, UNENCRYPTED_MARK, { value: text(flag), enumerable: false });
    }
    return value;
  }
}

module.exports = {
  UNENCRYPTED_METADATA,
  UNENCRYPTED_MARK,
  payloadConverter: new MarkingPayloadConverter(),
  // Messages and stack traces of failures go into an encoded payload, which the codec encrypts.
  failureConverter: new DefaultFailureConverter({ encodeCommonAttributes: true }),
};
