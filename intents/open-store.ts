import type { TollgateConfig } from '../config/config-schema';
import { ConfigError } from '../config/config-error';
import { openPostgresStore } from './postgres-store';
import type { IdempotencyStore } from './intent-store';
import { openSqliteStore } from './sqlite-store';

/** The idempotency store the config chooses; a PostgreSQL store needs its URL in the named environment variable. */
export function openConfiguredStore(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): IdempotencyStore {
  return config.store.backend === 'sqlite' ? openSqliteStore(config.store.sqliteFile) : openPostgresStore(postgresUrl(config, env));
}

/** The PostgreSQL URL of the configured store, from the environment variable the config names. */
export function postgresUrl(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): string {
  const url = env[config.store.postgresUrlEnv];
  if (!url)
    throw new ConfigError(
      `store.postgresUrlEnv: the environment variable ${config.store.postgresUrlEnv} is not set; it holds the PostgreSQL URL`,
    );
  return url;
}
