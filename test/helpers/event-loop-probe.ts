const PROBE_INTERVAL_MS = 50;

/** The longest delay, beyond its interval, that a repeating timer saw while it ran: how long the event loop was blocked at most. */
export function eventLoopProbe() {
  let last = performance.now();
  let worstDelayMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worstDelayMs = Math.max(worstDelayMs, now - last - PROBE_INTERVAL_MS);
    last = now;
  }, PROBE_INTERVAL_MS);
  return {
    stop(): number {
      clearInterval(timer);
      return worstDelayMs;
    },
  };
}
