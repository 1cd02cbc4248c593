import type { ErrorCode } from '../common/codes';
import { checkErrorCode } from './error-code-check';

const OUTCOME = Symbol.for('tollgate.ToolOutcome');

/** What a handler returns to say, without throwing, whether it succeeded. */
export type ToolOutcome =
  | { [OUTCOME]: true; ok: true; data: unknown }
  | { [OUTCOME]: true; ok: false; message: string; code: ErrorCode; retryable: boolean; retryAfterMs?: number };

/** Builds and recognizes handler outcomes; a handler's plain string return is a success too. */
export const ToolOutcome = {
  /** The call succeeded with this data. */
  ok(data: unknown): ToolOutcome {
    return { [OUTCOME]: true, ok: true, data };
  },
  /** The call failed; `message` is short and meant for the model; a `code` outside `ERROR_CODES` throws, naming them. */
  error(
    message: string,
    { code = 'tool_failure', retryable = false, retryAfterMs }: { code?: ErrorCode; retryable?: boolean; retryAfterMs?: number } = {},
  ): ToolOutcome {
    code = checkErrorCode(code, 'ToolOutcome.error');
    return { [OUTCOME]: true, ok: false, message, code, retryable, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  },
  /** Whether a handler's return value is an outcome built here. */
  is(value: unknown): value is ToolOutcome {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[OUTCOME] === true;
  },
};
