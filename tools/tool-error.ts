import type { ErrorCode } from '../common/codes';
import { checkErrorCode } from './error-code-check';
import { TollgateError } from '../common/tollgate-error';

/** A thrown error that says its own code; handlers may throw it instead of returning an outcome. */
export class ToolError extends TollgateError {
  static override readonly marker = 'tollgate.error.ToolError';
  override name = 'ToolError';
  constructor(
    message: string,
    readonly code: ErrorCode,
    readonly retryable = code === 'transient_failure',
    /** How long the service asked to wait before the next attempt (an HTTP Retry-After); a read's retry waits this long instead of its backoff. */
    readonly options: { retryAfterMs?: number } = {},
  ) {
    super(message);
    checkErrorCode(code, 'ToolError');
  }
}
