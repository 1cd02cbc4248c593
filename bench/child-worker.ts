// What every bench worker process does around its own worker: it tells the bench it is ready, runs
// until the bench disconnects, then closes its connection; a failure is printed and exits 1.

/** Runs a worker in a bench child process until the parent disconnects. */
export async function runUntilParentLeaves(
  worker: { run(): Promise<void>; shutdown(): void },
  connection: { close(): Promise<void> },
): Promise<void> {
  process.on('disconnect', () => worker.shutdown());
  const running = worker.run();
  process.send?.('ready');
  await running;
  await connection.close();
}

/** A bench child's entry point: its failure printed, exit code 1. */
export function runChild(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
