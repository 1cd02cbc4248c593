import type { ErrorCode } from '../../common/codes';
import { ToolError } from '../../tools/tool-error';
import { CONNECTION_ERROR_CODES, systemErrorCode } from '../../hardened/network-errors';

const FORBIDDEN_CODES = new Set(['EACCES', 'EPERM']);

/** Maps an error a handler threw to a stable code, by its type and system code, never by its text. */
export function classifyError(error: unknown): { code: ErrorCode; retryable: boolean; message: string; retryAfterMs?: number } {
  if (ToolError.isInstance(error))
    return { code: error.code, retryable: error.retryable, message: error.message, retryAfterMs: error.options.retryAfterMs };
  const err = error instanceof Error ? error : new Error(String(error));
  const systemCode = systemErrorCode(err);
  const message = shortMessage(err);
  if (systemCode && FORBIDDEN_CODES.has(systemCode)) return { code: 'forbidden', retryable: false, message };
  if ((systemCode && CONNECTION_ERROR_CODES.has(systemCode)) || err.name === 'TimeoutError' || err.name === 'AbortError') {
    return { code: 'transient_failure', retryable: true, message };
  }
  return { code: 'tool_failure', retryable: false, message };
}

/** The first line of an error's message, bounded: what the model may see of a thrown error. */
export function shortMessage(error: Error, maxChars = 200): string {
  const firstLine = (error.message || error.name).split('\n')[0].trim();
  return firstLine.length > maxChars ? `${firstLine.slice(0, maxChars - 1)}…` : firstLine;
}
