// What a fault-test worker fixture says and waits for (test/helpers/worker-processes.ts starts them): kept apart, so that
// a fixture loads nothing of the helpers that build and start it.

/** What a fixture prints once it polls, and once it is built and waits for `go` on its standard input. */
export const WORKER_READY = 'worker ready';
export const WORKER_STANDING_BY = 'worker standing by';

/** In a fixture: when started to stand by, says so and waits for `go` on standard input. */
export async function standByIfAsked(settings: { standby?: boolean }): Promise<void> {
  if (!settings.standby) return;
  console.log(WORKER_STANDING_BY);
  await new Promise<void>((resolve) => {
    let seen = '';
    process.stdin.on('data', (chunk) => {
      seen += String(chunk);
      if (seen.includes('go\n')) resolve();
    });
  });
  process.stdin.pause();
}
