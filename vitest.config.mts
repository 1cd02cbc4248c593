import { defineConfig } from 'vitest/config';
// The tiers and their folders (docs/testing.md): unit (no Temporal server), workflow (the
// time-skipping test server), e2e (the dev server, the CLI, worker processes), browser (chromium),
// hostile (hostile input), faults (kills, restarts, outages, load).
import tiers from './test/helpers/tiers.json' with { type: 'json' };
import { LongestFirstSequencer } from './test/helpers/sequencer.mjs';

export default defineConfig({
  test: {
    // Temporal's native worker runs best in child processes; each file gets its own servers.
    pool: 'forks',
    // One file more than this machine's two cores: many files spend their time waiting on servers,
    // killed workers and timers, and a third file fills the CPU they leave idle (measured: the whole
    // suite in 530 s beside the type check, against 579 s with two).
    maxWorkers: 3,
    // Longest file first across every tier (recorded durations), so that no worker idles at the end.
    sequence: { sequencer: LongestFirstSequencer },
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Tests marked concurrent wait on timers (a retry window) rather than work, so more of them may wait at once.
    maxConcurrency: 16,
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: 'test-output/vitest-results.json' }]],
    // One project per tier, run alone with `vitest run --project <tier>`; a bare `vitest run` runs every tier.
    projects: Object.entries(tiers).map(([name, folders]) => ({
      extends: true,
      test: {
        name,
        include: folders.map((folder) => `${folder}/**/*.test.ts`),
        // Every tier but unit runs workflows: the run bundles them once for all of its files.
        globalSetup: name === 'unit' ? [] : ['test/helpers/global-setup.ts'],
      },
    })),
  },
});
