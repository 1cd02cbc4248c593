/**
 * What a failed request of a tool source to its service is known to mean, as the source tells the
 * boundary: it never left the worker ({@link NotSentError}), or it went out and no usable answer
 * came back ({@link AnswerLostError}), so the service may have acted on it. MCP servers and HTTP
 * APIs both say it this way; a refusal the service itself answered is a `ToolError`.
 */
import { TollgateError } from '../common/tollgate-error';

/** A request that never reached the service: nothing can have happened, so any call may be tried again. */
export class NotSentError extends TollgateError {
  static override readonly marker = 'tollgate.error.NotSentError';
  override name = 'NotSentError';
}

/**
 * A request that went out and whose answer is lost: the connection dropped or the process died
 * mid-call, the call timed out, the answer passed its byte cap, did not parse, or broke the tool's
 * output schema. The service may have acted on it.
 */
export class AnswerLostError extends TollgateError {
  static override readonly marker = 'tollgate.error.AnswerLostError';
  override name = 'AnswerLostError';
}
