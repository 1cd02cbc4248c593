/**
 * What an MCP request's failure is known to mean, as the tool source tells the boundary: it never
 * left the worker ({@link McpNotSentError}), the server answered with its own error (a JSON-RPC
 * error response: an `McpError` the SDK made of it), or it went out and no usable answer came
 * back ({@link McpAnswerLostError}), so the server may have done it.
 */

const NOT_SENT = Symbol.for('tollgate.mcp-not-sent');
const ANSWER_LOST = Symbol.for('tollgate.mcp-answer-lost');
const LISTING_BOUND = Symbol.for('tollgate.mcp-listing-bound');

/** Whether a value carries a marker, from any copy of this module. */
function marked(value: unknown, marker: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/** A call that never reached the server: nothing can have happened, so any call may be tried again. */
export class McpNotSentError extends Error {
  readonly [NOT_SENT] = true;
  override name = 'McpNotSentError';

  /** Whether a value is such an error, from any copy of this module. */
  static isInstance(value: unknown): value is McpNotSentError {
    return marked(value, NOT_SENT);
  }
}

/**
 * A request that went out and whose answer is lost: the connection dropped or the process died
 * mid-call, the call timed out, the answer passed its byte cap, did not parse, or broke the tool's
 * output schema. The server may have acted on it.
 */
export class McpAnswerLostError extends Error {
  readonly [ANSWER_LOST] = true;
  override name = 'McpAnswerLostError';

  /** Whether a value is such an error, from any copy of this module. */
  static isInstance(value: unknown): value is McpAnswerLostError {
    return marked(value, ANSWER_LOST);
  }
}

/** A `tools/list` that passed one of its bounds (deadline, pages, tools); `bound` names the config key. */
export class McpListingBoundError extends Error {
  readonly [LISTING_BOUND] = true;
  override name = 'McpListingBoundError';
  readonly bound: string;

  constructor({ message, bound }: { message: string; bound: string }) {
    super(message);
    this.bound = bound;
  }

  /** Whether a value is such an error, from any copy of this module. */
  static isInstance(value: unknown): value is McpListingBoundError {
    return marked(value, LISTING_BOUND);
  }
}
