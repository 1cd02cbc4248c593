import type { TollgateConfig } from '../config/config-schema';
import { ConfigError } from '../config/load-config';
import { openPostgresStore } from './postgres-store';
import type { IdempotencyStore } from './intent-store';
import { openSqliteStore } from './sqlite-store';

/** The idempotency store the config chooses; a PostgreSQL store needs its URL in the named environment variable. */
export function openConfiguredStore(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): IdempotencyStore {
  if (config.store.backend === 'sqlite') return openSqliteStore(config.store.sqliteFile);
  const url = env[config.store.postgresUrlEnv];
  if (!url)
    throw new ConfigError(
      `store.postgresUrlEnv: the environment variable ${config.store.postgresUrlEnv} is not set; it holds the PostgreSQL URL`,
    );
  return openPostgresStore(url);
}
