import type { z } from 'zod';
import { TollgateError } from '../common/tollgate-error';

/** A config that cannot be used; the message names the file and the key. */
export class ConfigError extends TollgateError {
  static override readonly marker = 'tollgate.error.ConfigError';
  override name = 'ConfigError';
}

/** One problem of a config, as `key.path: what is wrong`. */
export function describeIssue(issue: z.core.$ZodIssue): string {
  const at = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => `unknown key "${at ? `${at}.${key}` : key}"`).join('; ');
  }
  // A record's key that fails its own schema: say why, not only that it is invalid.
  if (issue.code === 'invalid_key') return `${at || '(top level)'}: ${issue.issues.map((inner) => inner.message).join('; ')}`;
  return `${at || '(top level)'}: ${issue.message}`;
}

/**
 * Validates one section given to the library rather than read from the file (`mcpToolSource({ … })`);
 * its errors name the key under the section's key, as the config's do, and `source` names where it was given.
 */
export function parseConfigSection<Schema extends z.ZodType>(
  section: { key: string; schema: Schema },
  data: unknown,
  source: string,
): z.output<Schema> {
  const result = section.schema.safeParse(data ?? {});
  if (!result.success) {
    const problems = result.error.issues.map((issue) => describeIssue({ ...issue, path: [section.key, ...issue.path] }));
    throw new ConfigError(`${source}: ${problems.join('; ')}`);
  }
  return result.data;
}
