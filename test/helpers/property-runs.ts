import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';

/** One property's run: what it was, its seed, how many cases ran, and the counterexample when one was found. */
export interface PropertyRun {
  property: string;
  seed: number;
  numRuns: number;
  failed: boolean;
  counterexample?: unknown;
}

const OUTPUT = path.join(__dirname, '..', '..', 'test-output', 'property-runs.jsonl');

/**
 * The seeds and counts of the property tests: `TOLLGATE_PROPERTY_SEED` replays one seed,
 * `TOLLGATE_PROPERTY_RUNS` sets how many cases each property runs; each run is printed and kept in
 * `test-output/property-runs.jsonl`, so a counterexample's seed is never lost.
 */
export const propertyRuns = {
  /** The seed of this run: the one given, or a fresh one. */
  seed(): number {
    const given = process.env.TOLLGATE_PROPERTY_SEED;
    if (given !== undefined && given !== '') {
      const seed = Number(given);
      if (!Number.isInteger(seed)) throw new Error(`TOLLGATE_PROPERTY_SEED must be an integer, got "${given}"`);
      return seed;
    }
    return Math.floor(Math.random() * 0x7fffffff);
  },
  /** How many cases a property runs: its own default, unless TOLLGATE_PROPERTY_RUNS says otherwise. */
  count(defaultRuns: number): number {
    const given = process.env.TOLLGATE_PROPERTY_RUNS;
    if (given === undefined || given === '') return defaultRuns;
    const runs = Number(given);
    if (!Number.isInteger(runs) || runs < 1) throw new Error(`TOLLGATE_PROPERTY_RUNS must be a positive integer, got "${given}"`);
    return runs;
  },
  /**
   * Checks one property on this run's seed and count: each drawn case's problems (none: it holds);
   * the run joins `runs`, and a counterexample fails the test with its seed and path.
   */
  async check<Case>({
    property,
    cases,
    defaultRuns,
    problems,
    runs,
  }: {
    property: string;
    cases: fc.Arbitrary<Case>;
    defaultRuns: number;
    problems: (drawn: Case) => Promise<string[]>;
    runs: PropertyRun[];
  }): Promise<void> {
    const seed = propertyRuns.seed();
    const numRuns = propertyRuns.count(defaultRuns);
    const details = await fc.check(
      fc.asyncProperty(cases, async (drawn) => {
        const found = await problems(drawn);
        if (found.length > 0) throw new Error(found.join('\n'));
      }),
      { numRuns, seed },
    );
    const { failed, counterexample } = details;
    runs.push({ property, seed, numRuns: details.numRuns, failed, counterexample });
    if (failed)
      throw new Error(
        `seed ${seed}, path ${details.counterexamplePath}, counterexample ${JSON.stringify(counterexample)}: ${(details.errorInstance as Error)?.message}`,
      );
  },
  /** Prints each run and appends it to the record. */
  record(runs: PropertyRun[]): void {
    if (runs.length === 0) return;
    mkdirSync(path.dirname(OUTPUT), { recursive: true });
    for (const run of runs) {
      console.log(`property "${run.property}": ${run.numRuns} runs, seed ${run.seed}${run.failed ? ', FAILED' : ''}`);
      appendFileSync(OUTPUT, `${JSON.stringify({ ...run, at: new Date().toISOString() })}\n`);
    }
  },
};
