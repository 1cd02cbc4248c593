import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Redactor } from './redact';

/**
 * A failure as it may leave an activity: its message, details and stack passed through the
 * worker's redactor. Temporal records what an activity throws in the turn's history, the worker
 * logs it ("Activity failed") and spans carry it, so a provider's error text that echoes a key is
 * redacted here, once, before any of them sees it. An ApplicationFailure keeps its type, retry
 * flag and next retry delay; any other error becomes a retryable ApplicationFailure of its name.
 * A cancellation passes as it is: the worker reports it as cancelled, not by its text.
 */
export function redactFailure(error: unknown, redactor: Redactor): unknown {
  if (error instanceof CancelledFailure || (error as Error | undefined)?.name === 'AbortError') return error;
  if (error instanceof ApplicationFailure) {
    const redacted = ApplicationFailure.create({
      type: error.type ?? undefined,
      message: redactor.text(error.message),
      nonRetryable: error.nonRetryable ?? false,
      nextRetryDelay: error.nextRetryDelay ?? undefined,
      details: error.details ? (redactor.value(error.details).value as unknown[]) : undefined,
      category: error.category ?? undefined,
    });
    redacted.stack = redactor.text(error.stack ?? '');
    return redacted;
  }
  const message = error instanceof Error ? error.message : String(error);
  const failure = ApplicationFailure.create({
    type: error instanceof Error ? error.name : 'Error',
    message: redactor.text(message),
    nonRetryable: false,
  });
  failure.stack = redactor.text((error as Error | undefined)?.stack ?? '');
  return failure;
}
