import type { HttpAnswer } from './openapi-http';

/**
 * Conditional requests (RFC 9110 §13): a write paired with a GET of the same resource is sent with
 * that GET's strong `ETag` as `If-Match`, so the server applies it only to the state it was decided
 * on, and a status check can prove "not applied" by the server's own means: the resource still has
 * the ETag the lost write was conditioned on, so it has not changed, so the write did not apply.
 */

/** A strong entity tag as RFC 9110 §8.8.3 writes it: a quoted string of visible characters, no `W/` (If-Match never matches a weak one). */
const STRONG_ETAG = /^"[\x21\x23-\x7e\x80-\xff]*"$/;

/** An answer's strong `ETag`, as sent; undefined when it has none, a weak one, or one that is malformed. */
export function strongEtag(answer: HttpAnswer): string | undefined {
  const value = answer.headers.etag;
  const text = Array.isArray(value) ? value[0] : value;
  return typeof text === 'string' && STRONG_ETAG.test(text.trim()) ? text.trim() : undefined;
}

/** How many intents a worker remembers the precondition of; past it, the oldest are forgotten first. */
export const REMEMBERED_PRECONDITIONS = 1_000;

/**
 * The `If-Match` each intent's latest write attempt went out with, kept while that attempt's answer
 * is unknown, by intent key. Held by this worker only: a status check on another worker (or after a
 * restart) does not know it, and then says `unknown` rather than `not_applied`.
 */
export class SentPreconditions {
  private readonly byIntent = new Map<string, string>();

  constructor(private readonly capacity = REMEMBERED_PRECONDITIONS) {}

  /** Records the ETag an intent's write is about to be sent with. */
  remember(intent: string, etag: string): void {
    this.byIntent.delete(intent);
    this.byIntent.set(intent, etag);
    if (this.byIntent.size > this.capacity) this.byIntent.delete(this.byIntent.keys().next().value!);
  }

  /** Forgets an intent's precondition: its write was answered, or went out unconditionally. */
  forget(intent: string): void {
    this.byIntent.delete(intent);
  }

  /** The ETag an intent's latest write went out with, if this worker sent it and its answer is unknown. */
  sentWith(intent: string): string | undefined {
    return this.byIntent.get(intent);
  }
}
