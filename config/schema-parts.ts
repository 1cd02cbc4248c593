import { z } from 'zod';
import { parseDuration } from '../common/duration';

// The value shapes every config section is written with; each section itself lives beside the code that reads it.

/** Milliseconds, or a text such as `10s` (the `ms` format Temporal uses). */
export const duration = z
  .union([
    z.number().nonnegative(),
    z.string().refine((text) => parseDuration(text) !== undefined, 'expected a duration like 500ms, 10s, 5 minutes, 24h'),
  ])
  .describe('milliseconds, or a text such as 10s');

/** A duration longer than zero (zero would mean "at once" where it must mean "some time"). */
export const positiveDuration = duration.refine((value) => (parseDuration(value) ?? 0) > 0, 'expected a duration longer than 0');

/** A TCP port. */
export const port = z.number().int().min(1).max(65535);

/** The name of an environment variable (a secret is named, never written into the config). */
export const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable');

/** An http(s) URL. */
export const httpUrl = z.string().regex(/^https?:\/\/\S+$/, 'expected an http(s) URL');

/** Whether a text is a regular expression JavaScript accepts. */
export function isRegExp(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}
