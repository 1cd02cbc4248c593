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

/** What a redaction of a JSON-like value gave: the copy to show, and how many strings in it had a secret replaced. */
export interface RedactedValue {
  value: unknown;
  /** Strings (values or keys) in which at least one secret was replaced; 0 when the copy equals the original. */
  redactedValues: number;
}

/** The worker's one redaction pass: the built-in secret shapes and the config's patterns, compiled once. */
export interface Redactor {
  readonly patterns: readonly RegExp[];
  /** Replaces every secret in a text. */
  text(text: string): string;
  /** A redacted copy of a JSON-like value, and how many of its strings changed. */
  value(value: unknown): RedactedValue;
}

/** Builds the redactor of a worker from the config's `redact.patterns` (JavaScript regular expression sources). */
export function createRedactor(configPatterns: readonly string[] = []): Redactor {
  const patterns = [
    ...DEFAULT_SECRET_PATTERNS,
    ...configPatterns.map((source, index) => {
      try {
        return new RegExp(source, 'g');
      } catch (error) {
        throw new Error(`redact.patterns[${index}] is not a valid regular expression: ${(error as Error).message}`, { cause: error });
      }
    }),
  ];
  const text = (input: string) => redactText(input, patterns);
  const value = (input: unknown): RedactedValue => {
    let redactedValues = 0;
    const visit = (item: unknown): unknown => {
      if (typeof item === 'string') {
        const replaced = text(item);
        if (replaced !== item) redactedValues++;
        return replaced;
      }
      if (Array.isArray(item)) return item.map(visit);
      if (item && typeof item === 'object')
        return Object.fromEntries(Object.entries(item).map(([key, entry]) => [visit(key) as string, visit(entry)]));
      return item;
    };
    const copy = visit(input);
    return { value: copy, redactedValues };
  };
  return { patterns, text, value };
}
