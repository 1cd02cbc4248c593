import { STORE_FAULT_RETRY } from '../../common/defaults';
import { IntentStoreError } from '../../intents/intent-store';

/** How long a store call is retried, and the backoff between its tries. */
export interface StoreRetryWindow {
  windowMs: number;
  initialIntervalMs: number;
  maximumIntervalMs: number;
}

/**
 * Runs a store call that is safe to repeat (a read, or a claim under one claim token) until it
 * answers, for at most the window: each try is given up when the window ends (a store that hangs
 * counts as failing), and the last `IntentStoreError` is thrown once it has. Anything else thrown
 * is passed on at once; the guarded store (guard-store.ts) turns every store fault into an
 * `IntentStoreError` before it gets here.
 */
export async function retryStoreCall<T>({
  operation,
  call,
  window = STORE_FAULT_RETRY,
  onFailure = () => undefined,
}: {
  /** Names the call in the error of a try that did not answer within the window. */
  operation: string;
  call: () => Promise<T>;
  window?: StoreRetryWindow;
  /** Told of each failed try (the worker logs it). */
  onFailure?: (error: IntentStoreError, tries: number) => void;
}): Promise<T> {
  const deadline = Date.now() + window.windowMs;
  let interval = window.initialIntervalMs;
  for (let tries = 1; ; tries++) {
    let timer: NodeJS.Timeout | undefined;
    const left = Math.max(1, deadline - Date.now());
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new IntentStoreError(operation, `no answer within ${window.windowMs} ms`)), left);
    });
    const attempt = Promise.resolve().then(call);
    // A try given up on may still fail later; that failure has nobody left to hear it.
    attempt.catch(() => undefined);
    try {
      return await Promise.race([attempt, late]);
    } catch (error) {
      if (!IntentStoreError.isInstance(error)) throw error;
      onFailure(error, tries);
      const wait = Math.min(interval, window.maximumIntervalMs);
      if (Date.now() + wait >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
      interval *= 2;
    } finally {
      clearTimeout(timer);
    }
  }
}
