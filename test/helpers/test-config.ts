import path from 'node:path';
import type { TollgateConfig } from '../../config/config-schema';
import { PROJECT_ROOT } from '../../config/load-config';
import { testConfig as kitTestConfig } from '../../testing/config';

/**
 * A config with every default, the project's corpus, a fresh workspace and store in a temporary
 * folder, and the given changes; no environment overrides.
 */
export function testConfig(data: Record<string, unknown> = {}): TollgateConfig {
  return kitTestConfig({ corpus: path.join(PROJECT_ROOT, 'examples', 'corpus'), ...data }, { baseDir: PROJECT_ROOT });
}
