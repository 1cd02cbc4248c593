import { APICallError } from '@ai-sdk/provider';
import { BodyTooLargeError } from '../../hardened/capped-fetch';
import { CONNECTION_ERROR_CODES, systemErrorCode } from '../../hardened/network-errors';
import { TollgateError } from '../../common/tollgate-error';

const RETRYABLE_STATUS = new Set([408, 409, 425, 429, 500, 502, 503, 504, 529]);

/**
 * A reply that ended without the provider's completion signal (the finish reason `interrupted`, or
 * a stream with no finish part: the connection closed cleanly before the provider's last event),
 * so it may be cut short. It is a transient fault like a broken connection: what a step does with
 * it depends on whether a chunk went out (the model step's rule).
 */
export class IncompleteStreamError extends TollgateError {
  static override readonly marker = 'tollgate.error.IncompleteStreamError';
  override readonly name = 'IncompleteStreamError';

  constructor() {
    super("the model provider's answer ended without its completion signal");
  }
}

/** How a failed model call may be retried: whether at all, and after how long the provider asked. */
export interface ModelFailure {
  retryable: boolean;
  /** From Retry-After / retry-after-ms, before any cap. */
  retryAfterMs?: number;
  status?: number;
  message: string;
}

/** A Retry-After value (seconds, or an HTTP date) in milliseconds from `now`; nothing when absent or unreadable. */
export function parseRetryAfter(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const lower = Object.fromEntries(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]));
  const milliseconds = Number(lower['retry-after-ms']);
  if (lower['retry-after-ms'] !== undefined && Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = lower['retry-after']?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The {@link BodyTooLargeError} in an error or its causes (a provider may wrap what its body's reader raised). */
function tooLarge(error: unknown): BodyTooLargeError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    if (BodyTooLargeError.isInstance(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Sorts a model-call failure: 408/409/425/429/5xx/529 and connection errors may be retried, the
 * rest not. An answer cut at `maxResponseBytes`, and one that ended without the provider's
 * completion signal, are transient too: what a step does with them depends on whether a chunk went
 * out (the model step's rule).
 */
export function classifyModelError(error: unknown): ModelFailure {
  const capped = tooLarge(error);
  if (capped) {
    return {
      retryable: true,
      message: `the model provider's answer passed ${capped.maxBytes} bytes (maxResponseBytes); the rest was not read`,
    };
  }
  if (IncompleteStreamError.isInstance(error)) return { retryable: true, message: error.message };
  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    const cause = systemErrorCode(error.cause);
    // A successful answer whose body broke off while it was read (a reply asked for whole, say).
    if (status !== undefined && status < 300 && cause && CONNECTION_ERROR_CODES.has(cause)) {
      return { retryable: true, status, message: `the connection to the model provider broke while its answer was read (${cause})` };
    }
    const retryable = (status !== undefined && RETRYABLE_STATUS.has(status)) || (status === undefined && error.isRetryable);
    return {
      retryable,
      retryAfterMs: parseRetryAfter(error.responseHeaders),
      status,
      message: `the model provider answered ${status ?? 'with an error'}: ${error.message.split('\n')[0].slice(0, 300)}`,
    };
  }
  const code = systemErrorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code && CONNECTION_ERROR_CODES.has(code)) {
    return { retryable: true, message: `the connection to the model provider failed (${code ?? message.slice(0, 80)})` };
  }
  return { retryable: false, message: `the model call failed: ${message.split('\n')[0].slice(0, 300)}` };
}
