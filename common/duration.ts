const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The text form of a duration accepted in config and tool declarations, such as `500ms`, `10s`, `24h`. */
export const DURATION_PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/** A duration in milliseconds from a number of milliseconds or a text such as `10s`; throws on anything else. */
export function toMilliseconds(duration: number | string): number {
  if (typeof duration === 'number') {
    if (!Number.isFinite(duration) || duration < 0) throw new Error(`a duration must be a non-negative number of milliseconds, got ${duration}`);
    return duration;
  }
  const match = DURATION_PATTERN.exec(duration.trim());
  if (!match) throw new Error(`"${duration}" is not a duration; write it like 500ms, 10s, 5m, 24h or 7d`);
  return Math.round(Number(match[1]) * UNITS_MS[match[2]]);
}
