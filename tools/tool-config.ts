import { z } from 'zod';
import { DEFAULT_RETRY_BACKOFF } from '../common/defaults';
import { duration, positiveDuration } from '../config/schema-parts';

/** Per-tool overrides of a tool's declared policy (config `tools.<name>`, applied by the registry). */
export const toolOverrideSchema = z.strictObject({
  enabled: z.boolean().optional(),
  timeout: duration.optional(),
  maxAttempts: z.number().int().min(1).max(20).optional(),
  maxOutputChars: z.number().int().min(16).optional(),
  concurrency: z.number().int().min(1).optional(),
  approvalTimeout: duration.optional(),
  /** How long a running call may go without a heartbeat before its worker is taken for lost (see `defineTool`'s `heartbeatTimeout`). */
  heartbeatTimeout: positiveDuration.optional(),
  /** Argument fields shown in the Web UI's one-line summary of a call. */
  summaryFields: z.array(z.string().min(1)).optional(),
});

/** How read tools are retried between attempts (the number of attempts is per tool). */
export const retrySchema = z.strictObject({
  initialInterval: duration.default(DEFAULT_RETRY_BACKOFF.initialIntervalMs),
  backoffCoefficient: z.number().min(1).default(DEFAULT_RETRY_BACKOFF.backoffCoefficient),
  maximumInterval: duration.default(DEFAULT_RETRY_BACKOFF.maximumIntervalMs),
});
