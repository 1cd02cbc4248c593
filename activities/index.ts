import type { TollgateConfig } from '../config/config-schema';
import { openCorpus } from './corpus';
import type { ToolDefinition } from './define-tool';
import { createModelStep } from './model-step';
import { createRunTool } from './run-tool';
import { createToolRegistry, retryBackoffFromConfig, type ToolRegistry } from './tool-registry';
import { getDocumentTool } from './tools/get-document';
import { searchLocalSourcesTool } from './tools/search-local-sources';

/** What the activities are built from; tests pass their own tools. */
export interface ActivityDependencies {
  config: TollgateConfig;
  /** Replaces the built-in tools when given. */
  tools?: ToolDefinition[];
}

/** The tools every worker serves unless told otherwise. */
export function builtInTools(config: TollgateConfig): ToolDefinition[] {
  const corpus = openCorpus(config.corpus);
  return [searchLocalSourcesTool(corpus), getDocumentTool(corpus)];
}

/** Builds the activities; their export names are their registered names. */
export function createActivities({ config, tools }: ActivityDependencies) {
  const registry: ToolRegistry = createToolRegistry({
    tools: tools ?? builtInTools(config),
    overrides: config.tools,
    retry: retryBackoffFromConfig(config.retry),
  });
  return {
    modelStep: createModelStep({ registry, config }),
    runTool: createRunTool({ registry }),
  };
}

/** The activity functions a worker registers, as the workflow sees their types. */
export type Activities = ReturnType<typeof createActivities>;
