const PROBE_INTERVAL_MS = 50;

/** CPU time this thread has used, in milliseconds (the whole process's where Node.js cannot tell a thread's). */
function threadCpuMs(): number {
  const usage = typeof process.threadCpuUsage === 'function' ? process.threadCpuUsage() : process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * How long the event loop was held by this thread's own work at most: the CPU time the thread used
 * between two ticks of a repeating timer (a stretch that blocks the loop lies within one such
 * interval, so the worst interval bounds it), beside the longest wall-clock delay of the timer.
 * On a machine shared with other busy processes the wall delay also counts the time the thread was
 * not scheduled at all; the CPU time does not, so it is what tells a stall caused by the work under
 * test from one caused by the machine's load.
 */
export function eventLoopWorkProbe() {
  let lastWall = performance.now();
  let lastCpu = threadCpuMs();
  let worstBusyMs = 0;
  let worstDelayMs = 0;
  const timer = setInterval(() => {
    const wall = performance.now();
    const cpu = threadCpuMs();
    worstDelayMs = Math.max(worstDelayMs, wall - lastWall - PROBE_INTERVAL_MS);
    worstBusyMs = Math.max(worstBusyMs, cpu - lastCpu);
    lastWall = wall;
    lastCpu = cpu;
  }, PROBE_INTERVAL_MS);
  return {
    /** Stops the probe: the worst CPU time held between two ticks (`busyMs`, the last stretch included) and the worst wall delay (`delayMs`). */
    stop(): { busyMs: number; delayMs: number } {
      clearInterval(timer);
      worstBusyMs = Math.max(worstBusyMs, threadCpuMs() - lastCpu);
      return { busyMs: worstBusyMs, delayMs: Math.max(0, worstDelayMs) };
    },
  };
}

/** How long the event loop may have stalled by the wall clock, on a machine whose other processes take its cores (liveness). */
const MAX_WALL_STALL_MS = 500;

/**
 * Asserts what a probe saw: the event loop held by this thread's work for less than `busyBelowMs`
 * (100 ms: issue 44's bound on a schema's, a document's or a tree's work), and not stalled past
 * liveness by the wall clock.
 */
export function expectLive({ busyMs, delayMs }: { busyMs: number; delayMs: number }, busyBelowMs = 100): void {
  if (busyMs >= busyBelowMs || delayMs >= MAX_WALL_STALL_MS)
    throw new Error(
      `the event loop was held ${busyMs.toFixed(1)} ms by this thread's work (bound ${busyBelowMs}) and stalled ${delayMs.toFixed(1)} ms by the clock (bound ${MAX_WALL_STALL_MS})`,
    );
}
