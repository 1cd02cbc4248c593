import { z } from 'zod';
import { DEFAULT_RETRY_BACKOFF, TOOL_DEFAULTS } from '../common/defaults';
import { toMilliseconds } from '../common/duration';
import { duration, positiveDuration } from '../config/schema-parts';
import type { ToolDefinition } from './define-tool';

/**
 * The policy fields every override of one tool takes, wherever it is written: config
 * `tools.<name>`, an MCP server's `tools.<tool>`, an OpenAPI source's `operations.<operationId>`.
 */
export const toolPolicyOverrideShape = {
  enabled: z.boolean().optional(),
  timeout: duration.optional(),
  maxAttempts: z.number().int().min(1).max(20).optional(),
  maxOutputChars: z.number().int().min(16).optional(),
  approvalTimeout: duration.optional(),
  /** How long a running call may go without a heartbeat before its worker is taken for lost (see `defineTool`'s `heartbeatTimeout`). */
  heartbeatTimeout: positiveDuration.optional(),
  /** Argument fields shown in the Web UI's one-line summary of a call. */
  summaryFields: z.array(z.string().min(1)).optional(),
};

/** One tool's policy override, as those fields give it. */
export type ToolPolicyOverride = z.output<z.ZodObject<typeof toolPolicyOverrideShape>>;

/** Per-tool overrides of a tool's declared policy (config `tools.<name>`, applied by the registry). */
export const toolOverrideSchema = z.strictObject({
  ...toolPolicyOverrideShape,
  concurrency: z.number().int().min(1).optional(),
  /** Whether every call of the tool waits for a person first, whatever its effect (an irreversible write always does). */
  needsApproval: z.boolean().optional(),
});

/** The policy of a tool a source builds (not declared with `defineTool`): its override over the defaults. */
export function sourceToolPolicy(
  override: ToolPolicyOverride,
): Pick<
  ToolDefinition,
  'timeoutMs' | 'maxAttempts' | 'maxOutputChars' | 'concurrency' | 'approvalTimeoutMs' | 'heartbeatTimeoutMs' | 'summaryFields'
> {
  return {
    timeoutMs: override.timeout === undefined ? TOOL_DEFAULTS.timeoutMs : toMilliseconds(override.timeout),
    maxAttempts: override.maxAttempts ?? TOOL_DEFAULTS.maxAttempts,
    maxOutputChars: override.maxOutputChars ?? TOOL_DEFAULTS.maxOutputChars,
    concurrency: TOOL_DEFAULTS.concurrency,
    approvalTimeoutMs: override.approvalTimeout === undefined ? TOOL_DEFAULTS.approvalTimeoutMs : toMilliseconds(override.approvalTimeout),
    ...(override.heartbeatTimeout === undefined ? {} : { heartbeatTimeoutMs: toMilliseconds(override.heartbeatTimeout) }),
    summaryFields: override.summaryFields,
  };
}

/** How read tools are retried between attempts (the number of attempts is per tool). */
export const retrySchema = z.strictObject({
  initialInterval: duration.default(DEFAULT_RETRY_BACKOFF.initialIntervalMs),
  backoffCoefficient: z.number().min(1).default(DEFAULT_RETRY_BACKOFF.backoffCoefficient),
  maximumInterval: duration.default(DEFAULT_RETRY_BACKOFF.maximumIntervalMs),
});
