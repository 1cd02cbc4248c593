/**
 * What an MCP request's failure is known to mean: never sent and answer lost are the shared
 * `NotSentError` and `AnswerLostError` (tools/call-errors.ts); an answer that is the server's own
 * error is an `McpError` the SDK made of it; a listing past its bounds is {@link McpListingBoundError}.
 */
import { TollgateError } from '../../common/tollgate-error';

/** A `tools/list` that passed one of its bounds (deadline, pages, tools); `bound` names the config key. */
export class McpListingBoundError extends TollgateError {
  static override readonly marker = 'tollgate.error.McpListingBoundError';
  override name = 'McpListingBoundError';
  readonly bound: string;

  constructor({ message, bound }: { message: string; bound: string }) {
    super(message);
    this.bound = bound;
  }
}
