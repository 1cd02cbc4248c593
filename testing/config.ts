import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TollgateConfig } from '../config/config-schema';
import { parseConfig } from '../config/load-config';

/**
 * A config for tests: every default, a fresh workspace, corpus folder and SQLite store in a new
 * temporary folder, and `data` (the keys of temporal.config.yaml) over them; no environment
 * overrides. A bad key is a ConfigError naming it (and `source`), as in a config file; relative
 * paths in `data` are read from `baseDir` (default: the temporary folder).
 */
export function testConfig(
  data: Record<string, unknown> = {},
  { source = 'test config', baseDir }: { source?: string; baseDir?: string } = {},
): TollgateConfig {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-test-'));
  return parseConfig(
    {
      corpus: path.join(folder, 'corpus'),
      workspace: path.join(folder, 'workspace'),
      store: { sqliteFile: path.join(folder, 'idempotency.db') },
      ...data,
    },
    { source, baseDir: baseDir ?? folder, env: {} },
  );
}
