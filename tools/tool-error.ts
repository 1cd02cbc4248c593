import type { ErrorCode } from '../common/codes';

/** A thrown error that says its own code; handlers may throw it instead of returning an outcome. */
export class ToolError extends Error {
  override name = 'ToolError';
  constructor(
    message: string,
    readonly code: ErrorCode,
    readonly retryable = code === 'transient_failure',
  ) {
    super(message);
  }
}
