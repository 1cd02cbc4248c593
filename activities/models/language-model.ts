import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ScriptStep } from '../../common/types';
import type { ModelEntry, TollgateConfig } from '../../config/config-schema';
import { ConfigError } from '../../config/load-config';
import { ScriptedLanguageModel } from './scripted-language-model';

/** What building a model may use besides its config entry: the environment for keys, and a fetch (tests pass a loopback one). */
export interface ModelEnvironment {
  env?: NodeJS.ProcessEnv;
  fetch?: typeof globalThis.fetch;
}

function apiKey(name: string, entryName: string, env: NodeJS.ProcessEnv): string {
  const value = env[name];
  if (!value) throw new ConfigError(`model "${entryName}": the environment variable ${name} (its apiKeyEnv) is not set`);
  return value;
}

/** A configured model behind the AI SDK's provider interface; none of them retries by itself (Tollgate's rule decides). */
export function createLanguageModel(
  entryName: string,
  entry: ModelEntry,
  { env = process.env, fetch }: ModelEnvironment = {},
): LanguageModelV3 {
  switch (entry.provider) {
    case 'scripted':
      return new ScriptedLanguageModel();
    case 'openai':
      return createOpenAI({ apiKey: apiKey(entry.apiKeyEnv, entryName, env), baseURL: entry.baseURL, fetch }).chat(entry.model);
    case 'anthropic':
      return createAnthropic({ apiKey: apiKey(entry.apiKeyEnv, entryName, env), baseURL: entry.baseURL, fetch })(entry.model);
    case 'openai-compatible':
      return createOpenAICompatible({
        name: entryName,
        baseURL: entry.baseURL,
        apiKey: entry.apiKeyEnv ? apiKey(entry.apiKeyEnv, entryName, env) : undefined,
        fetch,
        includeUsage: true,
      }).chatModel(entry.model);
  }
}

/** A scripted model playing exactly these steps, or its built-in plan. */
export function scriptedModel(script?: ScriptStep[]): LanguageModelV3 {
  return new ScriptedLanguageModel(script);
}

/** Builds every configured model once, so a missing API key stops the worker before any turn starts. */
export function createConfiguredModels(
  config: TollgateConfig,
  environment: ModelEnvironment = {},
): Map<string, { model: LanguageModelV3; entry: ModelEntry }> {
  return new Map(
    Object.entries(config.model.models).map(([name, entry]) => [name, { model: createLanguageModel(name, entry, environment), entry }]),
  );
}
