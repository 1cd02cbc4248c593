import { z } from 'zod';
import { httpUrl, port } from '../../config/schema-parts';

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
