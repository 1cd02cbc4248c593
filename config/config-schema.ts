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
  INTERRUPTED_STREAM_DEFAULTS,
  OUTCOME_DEFAULTS,
  STORE_RETENTION_DEFAULTS,
} from '../common/defaults';

const duration = z
  .union([
    z.number().nonnegative(),
    z.string().refine((text) => parseDuration(text) !== undefined, 'expected a duration like 500ms, 10s, 5 minutes, 24h'),
  ])
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

/** A Worker Deployment's name or a build id: the characters Temporal takes in both, and its bound on their length. */
const deploymentPart = z
  .string()
  .regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/, 'expected 1–255 letters, digits, "_", "-" or "." (not first)');

/**
 * How a worker joins Temporal's Worker Deployments: each build is a version of the deployment, a
 * turn is pinned to the build that started it, and a new build takes new turns once it is current
 * (docs/operations.md, "Deploying a new worker").
 */
export const deploymentSchema = z.strictObject({
  /** The Worker Deployment this worker belongs to; by default the task queue's name (`tollgate`). */
  name: deploymentPart.optional(),
  /** This worker's build; by default derived from the content of its workflow bundle, so the same code is the same build. */
  buildId: deploymentPart.optional(),
  /** `false`: an unversioned worker, which takes every turn on its task queue whatever build started it. */
  versioning: z.boolean().default(true),
  /**
   * When a new build becomes current: `auto` makes it current as it starts on a dev server (the
   * server keeps its state in SQLite) and leaves it to `tollgate deploy promote` elsewhere;
   * `on-start` always makes it current as it starts; `manual` never does.
   */
  makeCurrent: z.enum(['auto', 'on-start', 'manual'], { error: 'expected "auto", "on-start" or "manual"' }).default('auto'),
});

/** Where the Temporal server is and which names the turns use on it. */
export const temporalSchema = z.strictObject({
  address: z
    .string()
    .regex(/^[^\s:]+:\d+$/, 'expected host:port')
    .default('127.0.0.1:7233'),
  namespace: z.string().min(1).default('default'),
  taskQueue: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  devServer: devServerSchema.prefault({}),
  deployment: deploymentSchema.prefault({}),
});

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable');
const httpUrl = z.string().regex(/^https?:\/\/\S+$/, 'expected an http(s) URL');
/** The most tokens one model step may generate; sent to the provider with every request. */
const maxOutputTokens = z.number().int().min(1);
/**
 * Whether a step streams (the default: the live view sees its text; a stream cut off after a chunk
 * went out is never replayed unasked), or asks for the whole reply at once (`false`: no live text,
 * and a failed request is retried like any other, since nothing of it went out).
 */
const stream = z.boolean().optional();

/**
 * The most bytes a provider's answer to one request may have (a stream's events, a whole reply or
 * an error body), counted while it is read: past it the rest is not read and the step fails
 * (before its first chunk as a transient fault, after it as an interrupted stream). 32 MiB holds
 * well over 100,000 tokens of streamed events.
 */
export const DEFAULT_MODEL_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
const maxResponseBytes = z.number().int().min(1024, 'expected at least 1024 bytes');

/** The providers Tollgate names itself; any other `provider` is the name of an AI SDK provider package. */
export const BUILT_IN_PROVIDERS = ['scripted', 'openai', 'anthropic', 'openai-compatible'] as const;

/** A model of one of the built-in providers, or the embedded scripted model. */
export const builtInModelEntrySchema = z.discriminatedUnion('provider', [
  z.strictObject({ provider: z.literal('scripted') }),
  z.strictObject({
    provider: z.literal('openai'),
    model: z.string().min(1),
    apiKeyEnv: envName.default('OPENAI_API_KEY'),
    baseURL: httpUrl.optional(),
    maxOutputTokens: maxOutputTokens.optional(),
    stream,
    /** This model's cap on one answer, over `model.maxResponseBytes`. */
    maxResponseBytes: maxResponseBytes.optional(),
  }),
  z.strictObject({
    provider: z.literal('anthropic'),
    model: z.string().min(1),
    apiKeyEnv: envName.default('ANTHROPIC_API_KEY'),
    baseURL: httpUrl.optional(),
    /** Anthropic's API requires a cap on every request. */
    maxOutputTokens: maxOutputTokens.default(DEFAULT_ANTHROPIC_MAX_OUTPUT_TOKENS),
    stream,
    /** This model's cap on one answer, over `model.maxResponseBytes`. */
    maxResponseBytes: maxResponseBytes.optional(),
  }),
  z.strictObject({
    provider: z.literal('openai-compatible'),
    model: z.string().min(1),
    baseURL: httpUrl,
    /** Local servers (Ollama, vLLM, llama.cpp) usually need no key. */
    apiKeyEnv: envName.optional(),
    maxOutputTokens: maxOutputTokens.optional(),
    stream,
    /** This model's cap on one answer, over `model.maxResponseBytes`. */
    maxResponseBytes: maxResponseBytes.optional(),
  }),
]);

const packageName = z
  .string()
  .regex(
    /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/,
    'expected a built-in provider or an npm package name such as @ai-sdk/google',
  );

/**
 * A model of any installed AI SDK provider package (`@ai-sdk/google`, `@ai-sdk/mistral`, ...): its
 * factory (`factory`, or the package's one export whose name starts with `create`) is called with
 * `options` and the key from `apiKeyEnv`, and the model is taken from the provider by `model`.
 */
export const packageModelEntrySchema = z.strictObject({
  provider: packageName,
  model: z.string().min(1),
  /** The factory's export name, when the package has more than one `create...` function. */
  factory: z
    .string()
    .regex(/^[A-Za-z_$][A-Za-z0-9_$]*$/, 'expected the name of an exported function')
    .optional(),
  /** The environment variable whose value is passed as the factory's `apiKey`; providers that read their own variable need none. */
  apiKeyEnv: envName.optional(),
  /** The factory's other options (baseURL, headers without secrets, ...); a key never goes here. */
  options: z
    .record(z.string(), z.unknown())
    .refine((options) => !('apiKey' in options), 'a key never goes into the config: name its environment variable in apiKeyEnv')
    .default({}),
  maxOutputTokens: maxOutputTokens.optional(),
  stream,
  /** This model's cap on one answer, over `model.maxResponseBytes`. */
  maxResponseBytes: maxResponseBytes.optional(),
});

/**
 * A model the config names by a key of `model.models`: a built-in provider, the embedded scripted
 * model, or an AI SDK provider package. The entry is checked against the one schema its `provider`
 * picks, so its errors speak of that kind only.
 */
export const modelEntrySchema = z
  .custom<z.input<typeof builtInModelEntrySchema> | z.input<typeof packageModelEntrySchema>>()
  .transform((entry, context): z.output<typeof builtInModelEntrySchema> | z.output<typeof packageModelEntrySchema> => {
    const provider = (entry as { provider?: unknown } | undefined)?.provider;
    const builtIn = typeof provider !== 'string' || (BUILT_IN_PROVIDERS as readonly string[]).includes(provider);
    const parsed = (builtIn ? builtInModelEntrySchema : packageModelEntrySchema).safeParse(entry);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) context.issues.push({ ...issue, input: entry } as (typeof context.issues)[number]);
    return z.NEVER;
  });

/** One configured model. */
export type ModelEntry = z.output<typeof modelEntrySchema>;

/** A configured model of an AI SDK provider package. */
export type PackageModelEntry = z.output<typeof packageModelEntrySchema>;

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

/** Overrides of one MCP tool's policy, by the tool's name on its server (config `mcp.servers.<name>.tools.<tool>`). */
export const mcpToolOverrideSchema = z.strictObject({
  enabled: z.boolean().optional(),
  /** Wins over the server's annotations; `reversible_write` is refused, since an MCP tool has no status check. */
  effect: z.enum(['read', 'irreversible_write']).optional(),
  timeout: duration.optional(),
  maxAttempts: z.number().int().min(1).max(20).optional(),
  maxOutputChars: z.number().int().min(16).optional(),
  approvalTimeout: duration.optional(),
  summaryFields: z.array(z.string().min(1)).optional(),
});

const STDIO_ONLY = ['command', 'args', 'env', 'cwd'] as const;
const HTTP_ONLY = ['url', 'headersFromEnv'] as const;

/** The bounds of what one MCP server may send: bytes per message, pages and tools per listing. */
export const MCP_SERVER_DEFAULTS = { maxResponseBytes: 4 * 1024 * 1024, maxListPages: 100, maxTools: 1_000 } as const;

/** One MCP server: `command` (a child process spoken to over stdio) or `url` (Streamable HTTP). */
export const mcpServerSchema = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    /** Variables for the server's process, on top of a minimal environment (never the worker's whole environment). */
    env: z.record(envName, z.string()).optional(),
    cwd: z.string().optional(),
    url: httpUrl.optional(),
    /** Header name -> the environment variable holding its value, so a token stays out of the config. */
    headersFromEnv: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'expected an HTTP header name'), envName).optional(),
    /** Whether the server's tool annotations decide effects (default false: every tool is an irreversible write). */
    trustAnnotations: z.boolean().default(false),
    /** When true, a server that cannot start is logged and its tools are left out instead of stopping the worker. */
    optional: z.boolean().default(false),
    /** Only these tools (names on the server) are served; all when left out. */
    include: z.array(z.string().min(1)).optional(),
    /** These tools are never served. */
    exclude: z.array(z.string().min(1)).default([]),
    tools: z.record(z.string(), mcpToolOverrideSchema).default({}),
    /** How long starting, connecting and listing the tools may take; one deadline for the whole `tools/list`, every page. */
    connectTimeout: duration.default('30s'),
    /** The most bytes one message from the server may have (an HTTP body, a stdio line); a longer answer is cut off while read. */
    maxResponseBytes: z.number().int().min(1024).default(MCP_SERVER_DEFAULTS.maxResponseBytes),
    /** The most pages one `tools/list` may take. */
    maxListPages: z.number().int().min(1).default(MCP_SERVER_DEFAULTS.maxListPages),
    /** The most tools one `tools/list` may give. */
    maxTools: z.number().int().min(1).default(MCP_SERVER_DEFAULTS.maxTools),
  })
  .superRefine((server, context) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      context.addIssue({ code: 'custom', message: 'give exactly one of command (stdio) or url (Streamable HTTP)' });
      return;
    }
    const foreign = server.url === undefined ? HTTP_ONLY : STDIO_ONLY;
    for (const key of foreign) {
      if (server[key] !== undefined)
        context.addIssue({
          code: 'custom',
          path: [key],
          message: `${key} belongs to ${server.url === undefined ? 'a Streamable HTTP' : 'a stdio'} server, and this one has ${server.url === undefined ? 'a command' : 'a url'}`,
        });
    }
  });

/** One configured MCP server. */
export type McpServerConfig = z.output<typeof mcpServerSchema>;

/** The `mcp` section: MCP servers whose tools the worker serves as `<server>__<tool>`. */
export const mcpSchema = z.strictObject({
  servers: z.record(z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'expected 1-32 letters, digits, _ or -'), mcpServerSchema).default({}),
});

/** The validated `mcp` section. */
export type McpConfig = z.output<typeof mcpSchema>;

/** The `mcp` section as written (defaults left out), as `createWorker({ mcp })` takes it. */
export type McpConfigInput = z.input<typeof mcpSchema>;

/** How read tools are retried between attempts (the number of attempts is per tool). */
export const retrySchema = z.strictObject({
  initialInterval: duration.default(DEFAULT_RETRY_BACKOFF.initialIntervalMs),
  backoffCoefficient: z.number().min(1).default(DEFAULT_RETRY_BACKOFF.backoffCoefficient),
  maximumInterval: duration.default(DEFAULT_RETRY_BACKOFF.maximumIntervalMs),
});

/** Where a worker sends its traces and serves its metrics; each part is off when left out (docs/operations.md). */
export const telemetrySchema = z.strictObject({
  otlp: z
    .strictObject({
      /** The OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces. */
      endpoint: httpUrl,
      /** Headers sent with every export (an API key of the tracing backend, say). */
      headers: z.record(z.string(), z.string()).default({}),
      /** The `service.name` the spans carry. */
      serviceName: z.string().min(1).default('tollgate-worker'),
    })
    .optional(),
  prometheus: z
    .strictObject({
      /** The address `/metrics` listens on. */
      host: z.string().min(1).default('127.0.0.1'),
      port,
    })
    .optional(),
  /** Whether spans carry the prompt, the model's text and tool arguments and results (after the redaction pass); off by default. */
  recordContent: z.boolean().default(false),
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
      /** The cap on one provider answer, in bytes, for every configured model (each entry may set its own). */
      maxResponseBytes: maxResponseBytes.default(DEFAULT_MODEL_MAX_RESPONSE_BYTES),
      /**
       * A stream that broke after chunks went out: `ask` waits for a person's `resume` decision, `stop`
       * ends the turn `model_failed`, `fresh_step` starts a fresh step unasked (breaks the no-replay rule).
       */
      onInterruptedStream: z
        .enum(['ask', 'stop', 'fresh_step'], { error: 'expected "ask", "stop" or "fresh_step"' })
        .default(INTERRUPTED_STREAM_DEFAULTS.onInterruptedStream),
      /** With `ask`: how long the turn waits for the `resume` decision before it stops. */
      resumeTimeout: duration.default(INTERRUPTED_STREAM_DEFAULTS.resumeTimeoutMs),
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
      maxHistoryEvents: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxHistoryEvents),
      maxHistoryBytes: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxHistoryBytes),
      /** A turn's token budget, input and output tokens together; none when unset. */
      maxTokens: z.number().int().min(1).optional(),
      /** A conversation's token budget across all its turns and runs; none when unset. */
      maxConversationTokens: z.number().int().min(1).optional(),
    })
    .prefault({}),
  retry: retrySchema.prefault({}),
  store: z
    .strictObject({
      /** `sqlite` (one machine) or `postgres` (several workers on several machines). */
      backend: z.enum(['sqlite', 'postgres']).default('sqlite'),
      sqliteFile: z.string().default('.tollgate/state/idempotency.db'),
      /** The environment variable holding the PostgreSQL connection URL (it carries a password). */
      postgresUrlEnv: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable')
        .default('TOLLGATE_POSTGRES_URL'),
      /** Committed intents older than this are pruned (at worker start, then hourly); started ones are never deleted. */
      retention: positiveDuration.default(STORE_RETENTION_DEFAULTS.retentionMs),
    })
    .prefault({}),
  encryption: z
    .strictObject({
      /** The environment variable holding the keyring, `keyId:base64key` entries separated by commas (the first encrypts). No encryption when unset. */
      keysEnv: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable')
        .optional(),
      /**
       * Payloads a worker refuses when they arrive unencrypted: `decisions` (the `approval` signal and
       * the `decide` update, recorded as rejected) or `all` (also turn and conversation inputs and `send`).
       */
      requireEncrypted: z.enum(['decisions', 'all']).default('decisions'),
      codecServer: z
        .strictObject({
          port: z.number().int().min(1).max(65535).default(8888),
          /** The address it listens on. */
          host: z.string().min(1).default('127.0.0.1'),
          /** The environment variable holding the bearer token every caller must send; the server refuses to start without it. */
          tokenEnv: envName.default('TOLLGATE_CODEC_TOKEN'),
          /** Web UI origins allowed to call it. */
          origins: z
            .array(z.string().regex(/^https?:\/\/[^/\s]+$/, 'expected an origin like http://127.0.0.1:8233'))
            .default(['http://127.0.0.1:8233', 'http://localhost:8233']),
          /** `Host` header values it answers (host:port); by default the loopback names with its port. */
          hosts: z.array(z.string().regex(/^[^\s/]+:\d+$/, 'expected host:port')).optional(),
        })
        .prefault({}),
    })
    .prefault({}),
  approvals: z
    .strictObject({
      /**
       * Whether a decision must name the digest of the arguments it approves (the `approval` signal's
       * and the `decide` update's `argsDigest`); one without it is rejected and recorded.
       */
      requireDigest: z.boolean().default(true),
      /**
       * On a worker: the environment variable holding the approvers' public keys, `name:base64` entries
       * (raw 32-byte Ed25519 keys) separated by commas. When set, every decision must be signed by one
       * of them (docs/approvals.md); off when unset.
       */
      publicKeysEnv: envName.optional(),
      /**
       * On a client: the environment variable holding the operator's signing key, one `name:base64`
       * entry (the raw 32-byte Ed25519 private key).
       */
      privateKeyEnv: envName.optional(),
      /** How old a signed decision's `signedAt` may be when the turn takes it, by the turn's clock. */
      signatureMaxAge: duration.default('10 minutes'),
      /** How long an approved irreversible call may wait for a worker to start it; after that it ends as `not_run`. */
      scheduleToStart: positiveDuration.default(DEFAULT_APPROVED_SCHEDULE_TO_START_MS),
    })
    .prefault({}),
  outcomes: z
    .strictObject({
      /**
       * What a write whose outcome is unknown does: `ask` waits for a person's `resolve` (applied or
       * not applied); `report` gives the model `outcome_unknown` at once.
       */
      onUnknown: z.enum(['ask', 'report'], { error: 'outcomes.onUnknown must be "ask" or "report"' }).default(OUTCOME_DEFAULTS.onUnknown),
      /** How long `ask` waits for a resolution; after it the model gets `outcome_unknown`. */
      resolveTimeout: positiveDuration.default(OUTCOME_DEFAULTS.resolveTimeoutMs),
    })
    .prefault({}),
  redact: z
    .strictObject({
      patterns: z.array(z.string().refine(isRegExp, 'not a valid regular expression')).default([]),
    })
    .prefault({}),
  tools: z.record(z.string(), toolOverrideSchema).default({}),
  mcp: mcpSchema.prefault({}),
  telemetry: telemetrySchema.prefault({}),
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
