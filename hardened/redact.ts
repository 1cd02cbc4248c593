/**
 * The worker's one redaction primitive. Every text that leaves an activity or the worker (tool
 * results and failures, the model step's text, failures and live text, span attributes and
 * statuses, log lines) passes a {@link Redactor}: the built-in secret shapes, the config's
 * `redact.patterns`, and the worker's own secrets (the values of the environment variables its
 * config names for keys, tokens and URLs with passwords), each found wherever it appears.
 */
import type { TollgateConfig } from '../config/config-schema';

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

/** The text that stands where a value contains itself (it has no JSON form). */
export const CIRCULAR = '[circular]';

/**
 * A copy of a JSON-like value with `replace` applied to every string in it, keys included (objects
 * become plain objects, as JSON would give them). Written without recursion, so a tool's answer
 * nested thousands of levels deep is copied, not a stack overflow; a value that contains itself
 * gets {@link CIRCULAR} where it recurs.
 */
function mapStrings(value: unknown, replace: (text: string) => string): unknown {
  if (typeof value === 'string') return replace(value);
  if (!value || typeof value !== 'object') return value;
  interface Frame {
    source: object;
    keys?: string[];
    items: unknown[];
    built: unknown[];
  }
  const frame = (source: object): Frame =>
    Array.isArray(source)
      ? { source, items: source, built: [] }
      : { source, keys: Object.keys(source), items: Object.values(source), built: [] };
  const open = new Set<object>([value]);
  const stack: Frame[] = [frame(value)];
  for (;;) {
    const top = stack[stack.length - 1];
    if (top.built.length < top.items.length) {
      const item = top.items[top.built.length];
      if (typeof item === 'string') top.built.push(replace(item));
      else if (!item || typeof item !== 'object') top.built.push(item);
      else if (open.has(item)) top.built.push(CIRCULAR);
      else {
        open.add(item);
        stack.push(frame(item));
      }
      continue;
    }
    stack.pop();
    open.delete(top.source);
    const copy = top.keys ? Object.fromEntries(top.keys.map((key, index) => [replace(key), top.built[index]])) : top.built;
    if (stack.length === 0) return copy;
    stack[stack.length - 1].built.push(copy);
  }
}

/** Replaces every secret in every string of a JSON-like value, keys included. */
export function redactValue(value: unknown, patterns: readonly RegExp[] = DEFAULT_SECRET_PATTERNS): unknown {
  return mapStrings(value, (text) => redactText(text, patterns));
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

/**
 * The shortest worker secret that is redacted by its value: a shorter one would turn ordinary words
 * into `[redacted]` wherever they appear (such a value is no secret worth the name either).
 */
export const MIN_SECRET_CHARS = 8;

/** A pattern that finds any of these literal values (longest first, so a value inside another is not left half shown). */
function literalPattern(secrets: readonly string[]): RegExp | undefined {
  const values = [...new Set(secrets.filter((secret) => secret.length >= MIN_SECRET_CHARS))].sort((a, b) => b.length - a.length);
  if (values.length === 0) return undefined;
  return new RegExp(values.map((value) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
}

/** Builds the redactor of a worker from the config's `redact.patterns` (JavaScript regular expression sources) and its secrets' values. */
export function createRedactor(configPatterns: readonly string[] = [], { secrets = [] }: { secrets?: readonly string[] } = {}): Redactor {
  const literal = literalPattern(secrets);
  const patterns = [
    ...(literal ? [literal] : []),
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
    const copy = mapStrings(input, (item) => {
      const replaced = text(item);
      if (replaced !== item) redactedValues++;
      return replaced;
    });
    return { value: copy, redactedValues };
  };
  return { patterns, text, value };
}

/** A value and the parts of it that are secret on their own (the password of a URL, the key of a `name:key` entry). */
function secretParts(value: string | undefined): string[] {
  if (!value) return [];
  const parts = [value];
  for (const entry of value.split(',')) {
    const trimmed = entry.trim();
    // `Bearer <token>` and the like: the last word is the token.
    parts.push(trimmed, trimmed.split(/\s+/).pop() ?? trimmed);
    const colon = trimmed.indexOf(':');
    if (colon > 0 && !trimmed.includes('://')) parts.push(trimmed.slice(colon + 1));
  }
  try {
    const url = new URL(value);
    if (url.password) parts.push(url.password, decodeURIComponent(url.password));
  } catch {
    // Not a URL: the value itself is the secret.
  }
  return parts;
}

/**
 * The worker's secrets, by value: what the environment variables its config names hold (every
 * model's `apiKeyEnv`, `store.postgresUrlEnv`, `encryption.keysEnv`, the codec server's
 * `tokenEnv`, `approvals.privateKeyEnv`, each MCP server's `headersFromEnv` and `env`, each
 * OpenAPI source's `headersFromEnv`, each notification channel's secret variables), the
 * headers sent to the tracing backend, and the Temporal profile's API key.
 */
export function workerSecrets(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  const variables = new Set<string>();
  for (const entry of Object.values(config.model.models)) {
    if ('apiKeyEnv' in entry && entry.apiKeyEnv) variables.add(entry.apiKeyEnv);
  }
  variables.add(config.store.postgresUrlEnv);
  if (config.encryption.keysEnv) variables.add(config.encryption.keysEnv);
  variables.add(config.encryption.codecServer.tokenEnv);
  if (config.approvals.privateKeyEnv) variables.add(config.approvals.privateKeyEnv);
  const values: Array<string | undefined> = [];
  for (const server of Object.values(config.mcp.servers)) {
    for (const variable of Object.values(server.headersFromEnv ?? {})) variables.add(variable);
    values.push(...Object.values(server.env ?? {}));
  }
  for (const source of Object.values(config.openapi.sources)) {
    for (const variable of Object.values(source.headersFromEnv ?? {})) variables.add(variable);
  }
  // The notification channels' secrets: a webhook's signing secret (and URL when it is one), SMTP credentials, a Slack webhook's URL.
  for (const channel of Object.values(config.approvals.notify?.channels ?? {})) {
    if (channel.type === 'webhook') {
      variables.add(channel.secretEnv);
      if (channel.urlEnv) variables.add(channel.urlEnv);
    } else if (channel.type === 'email') {
      if (channel.smtp.auth) [channel.smtp.userEnv, channel.smtp.passwordEnv].forEach((variable) => variables.add(variable));
    } else variables.add(channel.urlEnv);
  }
  values.push(...[...variables].map((variable) => env[variable]));
  values.push(...Object.values(config.telemetry.otlp?.headers ?? {}));
  values.push(config.temporalProfile?.apiKey);
  return values.flatMap(secretParts);
}

/** The redactor of a worker: the config's `redact.patterns` and the worker's secrets ({@link workerSecrets}). */
export function redactorForConfig(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): Redactor {
  return createRedactor(config.redact.patterns, { secrets: workerSecrets(config, env) });
}
