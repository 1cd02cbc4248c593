// What every benchmark section shares: statistics, markdown tables and the results folder.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../config/load-config';

/** Where `npm run bench` writes its JSON (git-ignored). */
export const RESULTS_FOLDER = path.join(PROJECT_ROOT, 'bench', 'results');

/** The value below which `fraction` of the values lie (nearest rank). */
export function percentile(values: number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))];
}

export function median(values: number[]): number {
  return percentile(values, 0.5);
}

/** A ratio with two decimals, or "–" when the floor is zero. */
export function ratio(value: number, floor: number): string {
  return floor > 0 ? `×${(value / floor).toFixed(2)}` : '–';
}

/** A markdown table from a header and rows of cells. */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const line = (cells: Array<string | number>) => `| ${cells.map(String).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** One section's outcome: its markdown (title, table, notes) and its raw figures. */
export interface SectionResult {
  name: string;
  title: string;
  markdown: string;
  data: unknown;
}

export function writeResult(file: string, data: unknown): string {
  mkdirSync(RESULTS_FOLDER, { recursive: true });
  const target = path.join(RESULTS_FOLDER, file);
  writeFileSync(target, typeof data === 'string' ? data : `${JSON.stringify(data, null, 2)}\n`);
  return target;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `count` jobs with at most `lanes` of them at once; returns the wall time in ms. */
export async function inLanes(count: number, lanes: number, job: (index: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(lanes, count) }, async () => {
      while (next < count) await job(next++);
    }),
  );
  return performance.now() - started;
}

/** Per-round values: their median, least and greatest. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spread(values: number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** A ratio's median with its range over the rounds: "×0.97 (0.91–1.02)". */
export function spreadText({ median: middle, min, max }: Spread): string {
  return `×${middle.toFixed(2)} (${min.toFixed(2)}–${max.toFixed(2)})`;
}

/**
 * A goal judged on per-round ratios: met when every round meets it, missed when none does, and
 * otherwise inside the noise (the rounds disagree), with what the median says.
 */
export function judge(ratios: Spread, goal: number, direction: 'at most' | 'at least'): string {
  const meets = (value: number) => (direction === 'at most' ? value <= goal : value >= goal);
  if (meets(ratios.min) && meets(ratios.max)) return 'met';
  if (!meets(ratios.min) && !meets(ratios.max)) return 'missed';
  return `inside the noise (median ${meets(ratios.median) ? 'meets' : 'misses'} it)`;
}

/** The variants in round `round`'s order: the list rotated by the round, so each variant runs in each position. */
export function rotated<T>(items: readonly T[], round: number): T[] {
  const shift = round % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

/** A workflow cache size from the environment variable `name` (0, or a whole number ≥ 2, as the SDK takes), or undefined when unset. */
export function cacheSizeFromEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || (value !== 0 && value < 2)) throw new Error(`${name} must be 0 or a whole number ≥ 2, got "${raw}"`);
  return value;
}

/** BENCH_LOCAL_READS=1: the Tollgate workers run reads as local activities (config temporal.worker.localReads); unset or 0 leaves the config's default. */
export function localReadsFromEnv(): boolean | undefined {
  const raw = process.env.BENCH_LOCAL_READS;
  if (raw === undefined || raw === '') return undefined;
  if (raw !== '0' && raw !== '1') throw new Error(`BENCH_LOCAL_READS must be 0 or 1, got "${raw}"`);
  return raw === '1';
}
