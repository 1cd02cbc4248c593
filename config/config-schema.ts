import type { ClientConfigProfile } from '@temporalio/envconfig';
import { z } from 'zod';
import { storeSchema } from '../intents/store-config';
import { modelSchema } from '../activities/models/model-config';
import { approvalsSchema, limitsSchema, outcomesSchema } from '../activities/turn-settings-config';
import { encryptionSchema } from '../codec/encryption-config';
import { temporalSchema } from '../connection/temporal-config';
import { redactSchema } from '../hardened/redact-config';
import { corpusSchema, workspaceSchema } from '../tools/built-in/built-in-config';
import { retrySchema, toolOverrideSchema } from '../tools/tool-config';
import { toolSourceSectionsShape } from '../tools/tool-source-sections';
import { telemetrySchema } from '../worker/telemetry/telemetry-config';
import { inboxSchema } from '../client/inbox/inbox-config';
import { devServerSchema } from '../server/dev-server-config';
import { deploymentSchema } from '../worker/deployment-config';
import { workerCacheSchema } from '../worker/cache-config';
import { agentsSchema } from '../agents/agent-config';

/** Config `temporal`: the connection's keys, and beside them the dev server's, the deployment's and the worker cache's. */
const temporalSectionSchema = z.strictObject({
  ...temporalSchema.shape,
  devServer: devServerSchema.prefault({}),
  deployment: deploymentSchema.prefault({}),
  worker: workerCacheSchema.prefault({}),
});

/**
 * The whole `temporal.config.yaml`: one key per section, each section's schema beside the code
 * that reads it. A section left out of the file is its defaults.
 */
export const configSchema = z.strictObject({
  temporal: temporalSectionSchema.prefault({}),
  model: modelSchema.prefault({}),
  workspace: workspaceSchema,
  corpus: corpusSchema,
  limits: limitsSchema.prefault({}),
  retry: retrySchema.prefault({}),
  store: storeSchema.prefault({}),
  encryption: encryptionSchema.prefault({}),
  approvals: approvalsSchema.prefault({}),
  outcomes: outcomesSchema.prefault({}),
  redact: redactSchema.prefault({}),
  tools: z.record(z.string(), toolOverrideSchema).default({}),
  // The sections of the tool sources (`mcp`, `openapi`), each declared beside its source.
  ...toolSourceSectionsShape(),
  telemetry: telemetrySchema.prefault({}),
  inbox: inboxSchema.prefault({}),
  // Agents declared in the file, beside those given to createWorker({ agents }) (agents/agent-config.ts).
  agents: agentsSchema.default({}),
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
