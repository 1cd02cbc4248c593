import type { ErrorCode } from '../../common/codes';
import { ToolError } from '../../tools/tool-error';

const TRANSIENT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const FORBIDDEN_CODES = new Set(['EACCES', 'EPERM']);

/** Maps an error a handler threw to a stable code, by its type and system code, never by its text. */
export function classifyError(error: unknown): { code: ErrorCode; retryable: boolean; message: string } {
  if (error instanceof ToolError) return { code: error.code, retryable: error.retryable, message: error.message };
  const err = error instanceof Error ? error : new Error(String(error));
  const systemCode = (err as NodeJS.ErrnoException).code ?? (err.cause as NodeJS.ErrnoException | undefined)?.code;
  const message = shortMessage(err);
  if (systemCode && FORBIDDEN_CODES.has(systemCode)) return { code: 'forbidden', retryable: false, message };
  if ((systemCode && TRANSIENT_CODES.has(systemCode)) || err.name === 'TimeoutError' || err.name === 'AbortError') {
    return { code: 'transient_failure', retryable: true, message };
  }
  return { code: 'tool_failure', retryable: false, message };
}

/** The first line of an error's message, bounded: what the model may see of a thrown error. */
export function shortMessage(error: Error, maxChars = 200): string {
  const firstLine = (error.message || error.name).split('\n')[0].trim();
  return firstLine.length > maxChars ? `${firstLine.slice(0, maxChars - 1)}…` : firstLine;
}
