import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TollgateConfig } from '../../config/config-schema';
import { parseConfig, PROJECT_ROOT } from '../../config/load-config';

/**
 * A config with every default, the project's corpus, a fresh workspace and store in a temporary
 * folder, and the given changes; no environment overrides.
 */
export function testConfig(data: Record<string, unknown> = {}): TollgateConfig {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-test-'));
  return parseConfig(
    {
      corpus: path.join(PROJECT_ROOT, 'examples', 'corpus'),
      workspace: path.join(folder, 'workspace'),
      store: { sqliteFile: path.join(folder, 'idempotency.db') },
      ...data,
    },
    { source: 'test config', baseDir: PROJECT_ROOT, env: {} },
  );
}
