import { IntentStoreError, type ClaimResult, type IdempotencyStore } from './intent-store';

const GUARDED = Symbol.for('tollgate.guardedIntentStore');

/** Whether a claim's answer has the shape the boundary relies on. */
function isClaimResult(value: unknown): value is ClaimResult {
  if (typeof value !== 'object' || value === null) return false;
  const { claimed, owner, record } = value as Record<string, unknown>;
  if (typeof record !== 'object' || record === null) return false;
  const { state } = record as Record<string, unknown>;
  if (state !== 'started' && state !== 'committed') return false;
  return claimed === false || (claimed === true && typeof owner === 'string' && owner.length > 0);
}

/**
 * The store as the boundary uses it: whatever one of its methods throws or rejects with (an Error
 * of any class, a string, `undefined`, a synchronous throw), and a claim answered with something
 * that is not a claim result, becomes an `IntentStoreError` that names the operation. A custom
 * store can then fail only as a store fault, which the boundary classifies (not run, or unknown
 * after the handler ran), never as a failure of the activity or the workflow.
 */
export function guardStore(store: IdempotencyStore): IdempotencyStore {
  if ((store as unknown as Record<symbol, unknown>)[GUARDED] === true) return store;
  const call = async <T>(operation: string, work: () => Promise<T> | T): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw IntentStoreError.isInstance(error) ? error : new IntentStoreError(operation, error);
    }
  };
  const guarded: IdempotencyStore = {
    get: (key) => call(`read intent ${key}`, () => store.get(key)),
    claim: (request) =>
      call(`claim intent ${request?.key}`, async () => {
        const result: unknown = await store.claim(request);
        if (!isClaimResult(result))
          throw new Error('its answer is not a claim result ({ claimed: true, owner, record } or { claimed: false, record })');
        return result;
      }),
    commit: (commit) => call(`commit intent ${commit?.key}`, () => store.commit(commit)),
    recordApplied: (record) => call(`record applied intent ${record?.key}`, () => store.recordApplied(record)),
    endLease: (lease) => call(`end the lease of intent ${lease?.key}`, () => store.endLease(lease)),
    release: (release) => call(`release intent ${release?.key}`, () => store.release(release)),
    listTask: (taskId) => call(`list the intents of task ${taskId}`, () => store.listTask(taskId)),
    prune: (options) => call('prune committed intents', () => store.prune(options)),
    ...(store.keepContent && store.readContent
      ? {
          keepContent: (content) => call(`keep content ${content?.key}`, () => store.keepContent!(content)),
          readContent: (key) => call(`read content ${key}`, () => store.readContent!(key)),
        }
      : {}),
    ...(store.notificationSent && store.recordNotificationSent
      ? {
          notificationSent: (id) => call(`read sent notification ${id}`, () => store.notificationSent!(id)),
          recordNotificationSent: (sent) => call(`record sent notification ${sent?.id}`, () => store.recordNotificationSent!(sent)),
        }
      : {}),
    close: () => call('close', () => store.close()),
  };
  Object.defineProperty(guarded, GUARDED, { value: true });
  return guarded;
}
