/**
 * What an MCP request's failure is known to mean: never sent and answer lost are the shared
 * `NotSentError` and `AnswerLostError` (tools/call-errors.ts); an answer that is the server's own
 * error is an `McpError` the SDK made of it; a listing past its bounds is {@link McpListingBoundError}.
 */
import { carriesMarker } from '../call-errors';

const LISTING_BOUND = Symbol.for('tollgate.mcp-listing-bound');

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
    return carriesMarker(value, LISTING_BOUND);
  }
}
