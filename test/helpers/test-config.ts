import path from 'node:path';
import type { TollgateConfig } from '../../config/config-schema';
import { parseConfig, PROJECT_ROOT } from '../../config/load-config';

/** A config with every default, the project's corpus, and the given changes; no environment overrides. */
export function testConfig(data: Record<string, unknown> = {}): TollgateConfig {
  return parseConfig({ corpus: path.join(PROJECT_ROOT, 'examples', 'corpus'), ...data }, { source: 'test config', baseDir: PROJECT_ROOT, env: {} });
}
