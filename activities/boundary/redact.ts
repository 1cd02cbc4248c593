/** Secret shapes removed from every tool output before the model or the history sees it. */
export const DEFAULT_SECRET_PATTERNS: readonly RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bBearer\s+[A-Za-z0-9._~+/-]{8,}=*/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
];

/** The text that replaces a secret. */
export const REDACTED = '[redacted]';

/** Replaces every secret in a text. */
export function redactText(text: string, patterns: readonly RegExp[] = DEFAULT_SECRET_PATTERNS): string {
  return patterns.reduce((current, pattern) => current.replace(pattern, REDACTED), text);
}

/** Replaces every secret in every string of a JSON-like value, keys included. */
export function redactValue(value: unknown, patterns: readonly RegExp[] = DEFAULT_SECRET_PATTERNS): unknown {
  if (typeof value === 'string') return redactText(value, patterns);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, patterns));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [redactText(key, patterns), redactValue(item, patterns)]));
  }
  return value;
}
