import { z } from 'zod';
import { STORE_RETENTION_DEFAULTS } from '../common/defaults';
import { positiveDuration } from '../config/schema-parts';

/** The `store` section: the idempotency store a worker opens (open-store.ts) and how long it keeps committed intents. */
export const storeSchema = z.strictObject({
  /** `sqlite` (one machine) or `postgres` (several workers on several machines). */
  backend: z.enum(['sqlite', 'postgres']).default('sqlite'),
  sqliteFile: z.string().default('.tollgate/state/idempotency.db'),
  /** The environment variable holding the PostgreSQL connection URL (it carries a password). */
  postgresUrlEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable')
    .default('TOLLGATE_POSTGRES_URL'),
  /**
   * Whether model steps keep the turn's messages and large tool results here once and are sent them
   * by reference (history linear in the steps); false sends every message in every step's input, and
   * the store holds intents only. Off anyway with encrypted payloads (the store holds plain JSON).
   */
  keepContents: z.boolean().default(true),
  /** Committed intents older than this are pruned (at worker start, then hourly); started ones are never deleted. */
  retention: positiveDuration.default(STORE_RETENTION_DEFAULTS.retentionMs),
});
