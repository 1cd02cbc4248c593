import { z } from 'zod';

/**
 * The worker's workflow cache (config `temporal.worker`). A cached turn answers its next task
 * without replaying its history, at about 300 KB of worker memory; one evicted is replayed from its
 * history when its next task comes (an approval, a decision), in milliseconds for a waiting turn.
 * The cache keeps the turns used most recently, so running turns stay and turns waiting for a
 * person leave it first: size it to the turns in flight, not to the turns waiting.
 */
export const workerCacheSchema = z.strictObject({
  /** The most turns and conversations the worker keeps in memory (Temporal's `maxCachedWorkflows`); 0 caches none, else at least 2. */
  maxCachedWorkflows: z
    .number()
    .int()
    .refine((size) => size === 0 || size >= 2, 'expected 0 (no cache) or a whole number of at least 2 (the fewest a cache holds)')
    .default(500),
  /**
   * Read tools run as local activities in the workflow task that asks for them (their retries run
   * by the worker, within the tool's attempts and the config's backoff), saving the activity
   * task's trips through the server; reads with a heartbeat timeout stay activities. Off by
   * default: a local read shows in the history as a marker, not as a pending activity.
   */
  localReads: z.boolean().default(false),
});
