import { STORE_RETENTION_DEFAULTS } from '../common/defaults';
import type { IdempotencyStore, PruneReport } from './intent-store';

/** What a retention pass reports: how many committed intents it deleted and how many old started ones it kept, or why it failed. */
export type RetentionPass = { report: PruneReport; committedBefore: Date } | { error: unknown; committedBefore: Date };

/** A running retention schedule. */
export interface Retention {
  /** Runs one pass now; never throws (a failure is reported to `onPass` and the next pass tries again). */
  prune(): Promise<RetentionPass>;
  /** Stops the schedule; a pass under way finishes on its own. */
  stop(): void;
}

/**
 * Prunes the store's committed intents older than `retentionMs` now and then every `intervalMs`,
 * on an unref'd timer (it never keeps a process alive). Started intents are never deleted: nobody
 * knows whether they took effect, so the store keeps them and each pass counts them.
 */
export function startRetention({
  store,
  retentionMs,
  intervalMs = STORE_RETENTION_DEFAULTS.pruneIntervalMs,
  now = () => Date.now(),
  onPass = () => undefined,
}: {
  store: IdempotencyStore;
  retentionMs: number;
  intervalMs?: number;
  now?: () => number;
  onPass?: (pass: RetentionPass) => void;
}): Retention {
  if (!Number.isFinite(retentionMs) || retentionMs <= 0)
    throw new RangeError(`store.retention must be longer than 0 ms, got ${retentionMs}`);
  if (!Number.isFinite(intervalMs) || intervalMs <= 0)
    throw new RangeError(`the retention interval must be longer than 0 ms, got ${intervalMs}`);
  let stopped = false;
  async function prune(): Promise<RetentionPass> {
    const committedBefore = new Date(now() - retentionMs);
    let pass: RetentionPass;
    try {
      pass = { report: await store.prune({ committedBefore }), committedBefore };
    } catch (error) {
      pass = { error, committedBefore };
    }
    onPass(pass);
    return pass;
  }
  void prune();
  const timer = setInterval(() => {
    if (!stopped) void prune();
  }, intervalMs);
  timer.unref();
  return {
    prune,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
