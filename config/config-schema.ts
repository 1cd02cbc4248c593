import type { ClientConfigProfile } from '@temporalio/envconfig';
import { z } from 'zod';
import { parseDuration } from '../common/duration';
import {
  DEFAULT_ANTHROPIC_MAX_OUTPUT_TOKENS,
  DEFAULT_APPROVED_SCHEDULE_TO_START_MS,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_RETRY_BACKOFF,
  DEFAULT_TASK_QUEUE,
  DEFAULT_TURN_LIMITS,
  STORE_RETENTION_DEFAULTS,
} from '../common/defaults';

const duration = z
  .union([z.number().nonnegative(), z.string().refine((text) => parseDuration(text) !== undefined, 'expected a duration like 500ms, 10s, 5 minutes, 24h')])
  .describe('milliseconds, or a text such as 10s');

function isRegExp(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

/** A duration longer than zero (zero would mean "at once" where it must mean "some time"). */
const positiveDuration = duration.refine((value) => (parseDuration(value) ?? 0) > 0, 'expected a duration longer than 0');

const port = z.number().int().min(1).max(65535);

/** Options of the embedded Temporal dev server that `npm run server` and the demo start. */
export const devServerSchema = z.strictObject({
  ip: z.string().default('127.0.0.1'),
  uiPort: port.default(8233),
  dbFile: z.string().default('.tollgate/state/temporal.db'),
  logFile: z.string().default('.tollgate/state/dev-server.log'),
  logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('warn'),
  startTimeout: duration.default('30s'),
});

/** Where the Temporal server is and which names the turns use on it. */
export const temporalSchema = z.strictObject({
  address: z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port').default('127.0.0.1:7233'),
  namespace: z.string().min(1).default('default'),
  taskQueue: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  devServer: devServerSchema.prefault({}),
});

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable');
const httpUrl = z.string().regex(/^https?:\/\/\S+$/, 'expected an http(s) URL');
/** The most tokens one model step may generate; sent to the provider with every request. */
const maxOutputTokens = z.number().int().min(1);

/** A model the config names by a key of `model.models`: an AI SDK provider, or the embedded scripted model. */
export const modelEntrySchema = z.discriminatedUnion('provider', [
  z.strictObject({ provider: z.literal('scripted') }),
  z.strictObject({
    provider: z.literal('openai'),
    model: z.string().min(1),
    apiKeyEnv: envName.default('OPENAI_API_KEY'),
    baseURL: httpUrl.optional(),
    maxOutputTokens: maxOutputTokens.optional(),
  }),
  z.strictObject({
    provider: z.literal('anthropic'),
    model: z.string().min(1),
    apiKeyEnv: envName.default('ANTHROPIC_API_KEY'),
    baseURL: httpUrl.optional(),
    /** Anthropic's API requires a cap on every request. */
    maxOutputTokens: maxOutputTokens.default(DEFAULT_ANTHROPIC_MAX_OUTPUT_TOKENS),
  }),
  z.strictObject({
    provider: z.literal('openai-compatible'),
    model: z.string().min(1),
    baseURL: httpUrl,
    /** Local servers (Ollama, vLLM, llama.cpp) usually need no key. */
    apiKeyEnv: envName.optional(),
    maxOutputTokens: maxOutputTokens.optional(),
  }),
]);

/** One configured model. */
export type ModelEntry = z.output<typeof modelEntrySchema>;

/** Per-tool overrides of a tool's declared policy. */
export const toolOverrideSchema = z.strictObject({
  enabled: z.boolean().optional(),
  timeout: duration.optional(),
  maxAttempts: z.number().int().min(1).max(20).optional(),
  maxOutputChars: z.number().int().min(16).optional(),
  concurrency: z.number().int().min(1).optional(),
  approvalTimeout: duration.optional(),
  /** Argument fields shown in the Web UI's one-line summary of a call. */
  summaryFields: z.array(z.string().min(1)).optional(),
});

/** How read tools are retried between attempts (the number of attempts is per tool). */
export const retrySchema = z.strictObject({
  initialInterval: duration.default(DEFAULT_RETRY_BACKOFF.initialIntervalMs),
  backoffCoefficient: z.number().min(1).default(DEFAULT_RETRY_BACKOFF.backoffCoefficient),
  maximumInterval: duration.default(DEFAULT_RETRY_BACKOFF.maximumIntervalMs),
});

/** The whole `temporal.config.yaml`. */
export const configSchema = z.strictObject({
  temporal: temporalSchema.prefault({}),
  model: z
    .strictObject({
      default: z.string().min(1).default('scripted'),
      models: z.record(z.string(), modelEntrySchema).default({ scripted: { provider: 'scripted' } }),
      /** A provider's Retry-After is honoured up to this long. */
      maxRetryDelay: duration.default(DEFAULT_MAX_RETRY_DELAY_MS),
    })
    .prefault({}),
  workspace: z.string().default('.tollgate/workspace'),
  corpus: z.string().default('examples/corpus'),
  limits: z
    .strictObject({
      maxSteps: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxSteps),
      maxToolCalls: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxToolCalls),
      errorBudget: z.number().int().min(0).default(DEFAULT_TURN_LIMITS.errorBudget),
      deadline: duration.default(DEFAULT_TURN_LIMITS.deadlineMs),
    })
    .prefault({}),
  retry: retrySchema.prefault({}),
  store: z
    .strictObject({
      /** `sqlite` (one machine) or `postgres` (several workers on several machines). */
      backend: z.enum(['sqlite', 'postgres']).default('sqlite'),
      sqliteFile: z.string().default('.tollgate/state/idempotency.db'),
      /** The environment variable holding the PostgreSQL connection URL (it carries a password). */
      postgresUrlEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable').default('TOLLGATE_POSTGRES_URL'),
      /** Committed intents older than this are pruned (at worker start, then hourly); started ones are never deleted. */
      retention: positiveDuration.default(STORE_RETENTION_DEFAULTS.retentionMs),
    })
    .prefault({}),
  approvals: z
    .strictObject({
      /** How long an approved irreversible call may wait for a worker to start it; after that it ends as `not_run`. */
      scheduleToStart: positiveDuration.default(DEFAULT_APPROVED_SCHEDULE_TO_START_MS),
    })
    .prefault({}),
  encryption: z
    .strictObject({
      /** The environment variable holding the keyring, `keyId:base64key` entries separated by commas (the first encrypts). No encryption when unset. */
      keysEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable').optional(),
      codecServer: z
        .strictObject({
          port: z.number().int().min(1).max(65535).default(8888),
          /** Web UI origins allowed to call it. */
          origins: z.array(z.string()).default(['http://127.0.0.1:8233', 'http://localhost:8233']),
        })
        .prefault({}),
    })
    .prefault({}),
  redact: z
    .strictObject({
      patterns: z.array(z.string().refine(isRegExp, 'not a valid regular expression')).default([]),
    })
    .prefault({}),
  tools: z.record(z.string(), toolOverrideSchema).default({}),
});

/** The config as written in the file (every key optional). */
export type ConfigInput = z.input<typeof configSchema>;

/** The validated config, with defaults filled in and folders resolved to absolute paths. */
export type TollgateConfig = z.output<typeof configSchema> & {
  /** TLS, API key and gRPC metadata of the Temporal profile (see `loadTemporalProfile`); empty on a plain local server. */
  temporalProfile?: ClientConfigProfile;
  configFile?: string;
  projectRoot: string;
};
