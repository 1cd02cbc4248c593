import { z } from 'zod';
import {
  DEFAULT_ANTHROPIC_MAX_OUTPUT_TOKENS,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_MODEL_HEARTBEAT_TIMEOUT_MS,
  INTERRUPTED_STREAM_DEFAULTS,
} from '../../common/defaults';
import { duration, envName, httpUrl, positiveDuration } from '../../config/schema-parts';

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

/** The `model` section: the models a turn selects by name, the default one, and how their answers are bounded and retried. */
export const modelSchema = z.strictObject({
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
  /**
   * How long a model step may go without a heartbeat (one goes with the first chunk, then at most
   * every second while chunks stream) before the server gives up on its worker and another attempt
   * takes the step: a worker that died mid-stream is found out this long after.
   */
  heartbeatTimeout: positiveDuration.default(DEFAULT_MODEL_HEARTBEAT_TIMEOUT_MS),
});
