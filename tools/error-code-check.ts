import { ERROR_CODES, type ErrorCode } from '../common/codes';

/**
 * The code a handler names, checked against the closed set (a JavaScript caller, or a cast, gets
 * past the type): a code outside it would reach the model, the retry policies and the ToolEvent as
 * a code no other program knows, so it is refused where it is written, naming the allowed ones.
 */
export function checkErrorCode(code: unknown, where: string): ErrorCode {
  if (typeof code === 'string' && (ERROR_CODES as readonly string[]).includes(code)) return code as ErrorCode;
  const given = typeof code === 'string' ? `"${code}"` : String(code);
  throw new TypeError(
    `${where}: code ${given} is not a Tollgate error code; use one of ${ERROR_CODES.join(', ')} (docs/tools.md#error-codes)`,
  );
}
