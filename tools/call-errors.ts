/**
 * What a failed request of a tool source to its service is known to mean, as the source tells the
 * boundary: it never left the worker ({@link NotSentError}), or it went out and no usable answer
 * came back ({@link AnswerLostError}), so the service may have acted on it. MCP servers and HTTP
 * APIs both say it this way; a refusal the service itself answered is a `ToolError`.
 */

const NOT_SENT = Symbol.for('tollgate.request-not-sent');
const ANSWER_LOST = Symbol.for('tollgate.request-answer-lost');

/** Whether a value carries a marker, from any copy of this module. */
export function carriesMarker(value: unknown, marker: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/** A request that never reached the service: nothing can have happened, so any call may be tried again. */
export class NotSentError extends Error {
  readonly [NOT_SENT] = true;
  override name = 'NotSentError';

  /** Whether a value is such an error, from any copy of this module. */
  static isInstance(value: unknown): value is NotSentError {
    return carriesMarker(value, NOT_SENT);
  }
}

/**
 * A request that went out and whose answer is lost: the connection dropped or the process died
 * mid-call, the call timed out, the answer passed its byte cap, did not parse, or broke the tool's
 * output schema. The service may have acted on it.
 */
export class AnswerLostError extends Error {
  readonly [ANSWER_LOST] = true;
  override name = 'AnswerLostError';

  /** Whether a value is such an error, from any copy of this module. */
  static isInstance(value: unknown): value is AnswerLostError {
    return carriesMarker(value, ANSWER_LOST);
  }
}
