import type { TollgateConfig } from '../config/config-schema';
import { openCorpus } from './corpus';
import type { ToolDefinition } from './define-tool';
import { ConfigError } from '../config/load-config';
import { openSqliteStore, type IdempotencyStore } from './idempotency-store';
import { openPostgresStore } from './postgres-store';
import { createLookupStatus } from './lookup-status';
import { createModelStep } from './model-step';
import { createConfiguredModels, type ModelEnvironment } from './models/language-model';
import { DEFAULT_SECRET_PATTERNS } from './redact';
import { createRunTool } from './run-tool';
import { createToolRegistry, retryBackoffFromConfig, type ToolRegistry } from './tool-registry';
import { getDocumentTool } from './tools/get-document';
import { saveDraftTool } from './tools/save-draft';
import { searchLocalSourcesTool } from './tools/search-local-sources';
import { sendMessageTool } from './tools/send-message';
import { shellTool } from './tools/shell';

/** What the activities are built from; tests pass their own tools and store. */
export interface ActivityDependencies {
  config: TollgateConfig;
  /** Replaces the built-in tools when given. */
  tools?: ToolDefinition[];
  /** Replaces the SQLite store the config names. */
  store?: IdempotencyStore;
  /** Where model API keys are read (default: the process environment), and the fetch providers use. */
  modelEnvironment?: ModelEnvironment;
}

/** The tools every worker serves unless told otherwise. */
export function builtInTools(config: TollgateConfig): ToolDefinition[] {
  const corpus = openCorpus(config.corpus);
  const { workspace } = config;
  return [searchLocalSourcesTool(corpus), getDocumentTool(corpus), saveDraftTool({ workspace }), sendMessageTool({ workspace }), shellTool({ workspace })];
}

/** The idempotency store the config chooses; a PostgreSQL store needs its URL in the named environment variable. */
export function openConfiguredStore(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): IdempotencyStore {
  if (config.store.backend === 'sqlite') return openSqliteStore(config.store.sqliteFile);
  const url = env[config.store.postgresUrlEnv];
  if (!url) throw new ConfigError(`store.postgresUrlEnv: the environment variable ${config.store.postgresUrlEnv} is not set; it holds the PostgreSQL URL`);
  return openPostgresStore(url);
}

/** Builds the activities; their export names are their registered names. */
export function createActivities({ config, tools, store, modelEnvironment }: ActivityDependencies) {
  const models = createConfiguredModels(config, modelEnvironment);
  const registry: ToolRegistry = createToolRegistry({
    tools: tools ?? builtInTools(config),
    overrides: config.tools,
    retry: retryBackoffFromConfig(config.retry),
  });
  const intents = store ?? openConfiguredStore(config);
  const secretPatterns = [...DEFAULT_SECRET_PATTERNS, ...config.redact.patterns.map((source) => new RegExp(source, 'g'))];
  return {
    modelStep: createModelStep({ registry, config, models }),
    runTool: createRunTool({ registry, store: intents, secretPatterns }),
    lookupStatus: createLookupStatus({ registry, store: intents }),
  };
}

/** The activity functions a worker registers, as the workflow sees their types. */
export type Activities = ReturnType<typeof createActivities>;
