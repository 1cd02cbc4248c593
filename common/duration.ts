import ms, { type StringValue } from 'ms';

/**
 * Durations are read the way Temporal's SDK reads them (the `ms` format): a number of
 * milliseconds, or a text such as `500ms`, `10s`, `5 minutes`, `24h` or `7d`.
 */
export type Duration = number | string;

/** Milliseconds in a duration, or undefined when it is not one (negative, not finite, or not in the `ms` format). */
export function parseDuration(duration: Duration): number | undefined {
  let value: number | undefined;
  try {
    value = typeof duration === 'number' ? duration : ms(duration.trim() as StringValue);
  } catch {
    return undefined;
  }
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
}

/** A duration in milliseconds; throws an error naming the bad value on anything else. */
export function toMilliseconds(duration: Duration): number {
  const value = parseDuration(duration);
  if (value === undefined) throw new Error(`${JSON.stringify(duration)} is not a duration; write it like 500ms, 10s, 5 minutes, 24h or 7d`);
  return value;
}
