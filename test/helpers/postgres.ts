import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../config/load-config';

/** The test database `node scripts/setup.mjs --system` prepares, or the one TOLLGATE_TEST_POSTGRES_URL names. */
export function postgresUrl(): string {
  if (process.env.TOLLGATE_TEST_POSTGRES_URL) return process.env.TOLLGATE_TEST_POSTGRES_URL;
  const file = path.join(PROJECT_ROOT, '.tollgate', 'state', 'postgres-test-url');
  if (!existsSync(file))
    throw new Error('no PostgreSQL for the tests: run `node scripts/setup.mjs --system` as root, or set TOLLGATE_TEST_POSTGRES_URL');
  return readFileSync(file, 'utf8').trim();
}
