import type { LanguageModelV4 } from '@ai-sdk/provider';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ScriptStep } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { BUILT_IN_PROVIDERS, type ModelEntry, type PackageModelEntry } from './model-config';
import { ConfigError } from '../../config/config-error';
import { PROJECT_ROOT } from '../../config/package-root';
import { ScriptedLanguageModel } from './scripted-language-model';
import { cappedFetch } from '../../hardened/capped-fetch';

/** What building a model may use besides its config entry: the environment for keys, and a fetch (tests pass a loopback one). */
export interface ModelEnvironment {
  env?: NodeJS.ProcessEnv;
  fetch?: typeof globalThis.fetch;
  /** Where provider packages are looked up (default: the project's root). */
  projectRoot?: string;
}

/** Models built in code (any AI SDK LanguageModel of specification v4), by the name a turn selects them with. */
export type CodeModels = Record<string, LanguageModelV4>;

/** A configured or code-built model, and its config entry when it has one. */
export interface AvailableModel {
  model: LanguageModelV4;
  entry?: ModelEntry;
}

type ProviderFactory = (options: Record<string, unknown>) => unknown;

/**
 * The factory of an AI SDK provider package: the export the entry names, or the package's one
 * `create...` function. Names that export the same function (a deprecated alias such as
 * `createGoogleGenerativeAI` beside `createGoogle`) count as one factory.
 */
function providerFactory(entryName: string, entry: PackageModelEntry, root: string): ProviderFactory {
  const where = `model "${entryName}" (provider ${entry.provider})`;
  let loaded: Record<string, unknown>;
  try {
    loaded = createRequire(path.join(root, 'package.json'))(entry.provider) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`${where}: the package cannot be loaded (${(error as Error).message.split('\n')[0]}); is it installed?`);
  }
  const creators = Object.keys(loaded).filter((name) => /^create[A-Z]/.test(name) && typeof loaded[name] === 'function');
  const factories = creators.filter((name, index) => creators.findIndex((other) => loaded[other] === loaded[name]) === index);
  const name = entry.factory ?? (factories.length === 1 ? factories[0] : undefined);
  if (!name) {
    const found = factories.length === 0 ? 'none' : factories.join(', ');
    throw new ConfigError(`${where}: name its factory in "factory" (the package's create... functions: ${found})`);
  }
  if (typeof loaded[name] !== 'function') throw new ConfigError(`${where}: the package exports no function "${name}"`);
  return loaded[name] as ProviderFactory;
}

/** Checks that a value is an AI SDK language model Tollgate can stream from (specification v4, as the AI SDK 7 providers build). */
export function checkLanguageModel(value: unknown, where: string): LanguageModelV4 {
  const model = value as Partial<LanguageModelV4> | undefined;
  if (!model || typeof model !== 'object' || typeof model.doStream !== 'function') {
    throw new ConfigError(`${where}: not an AI SDK language model (it has no doStream)`);
  }
  if (model.specificationVersion !== 'v4') {
    throw new ConfigError(
      `${where}: its specificationVersion is ${String(model.specificationVersion)}; Tollgate takes v4 models (AI SDK 7 providers)`,
    );
  }
  return model as LanguageModelV4;
}

/** A model of an AI SDK provider package: factory(options + key + fetch), then the provider's language model by id. */
function packageModel(entryName: string, entry: PackageModelEntry, { env = process.env, fetch, projectRoot }: ModelEnvironment) {
  const factory = providerFactory(entryName, entry, projectRoot ?? PROJECT_ROOT);
  const key = entry.apiKeyEnv ? { apiKey: apiKey(entry.apiKeyEnv, entryName, env) } : {};
  const provider = factory({ ...entry.options, ...key, ...(fetch ? { fetch } : {}) }) as
    (((id: string) => unknown) & { languageModel?: (id: string) => unknown }) | { languageModel?: (id: string) => unknown } | undefined;
  const where = `model "${entryName}" (provider ${entry.provider})`;
  const build = provider?.languageModel;
  if (typeof build === 'function') return checkLanguageModel(build.call(provider, entry.model), where);
  if (typeof provider === 'function') return checkLanguageModel(provider(entry.model), where);
  throw new ConfigError(`${where}: its factory returned no provider (neither languageModel() nor a callable)`);
}

function isBuiltIn(entry: ModelEntry): entry is Exclude<ModelEntry, PackageModelEntry> {
  return (BUILT_IN_PROVIDERS as readonly string[]).includes(entry.provider);
}

function apiKey(name: string, entryName: string, env: NodeJS.ProcessEnv): string {
  const value = env[name];
  if (!value) throw new ConfigError(`model "${entryName}": the environment variable ${name} (its apiKeyEnv) is not set`);
  return value;
}

/**
 * The built-in providers' packages, loaded when a model of theirs is configured: each takes a few
 * hundred milliseconds to load, and a worker (or a test) that runs the scripted model needs none.
 */
const providerPackages = {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  openai: () => require('@ai-sdk/openai') as typeof import('@ai-sdk/openai'),
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  anthropic: () => require('@ai-sdk/anthropic') as typeof import('@ai-sdk/anthropic'),
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  openaiCompatible: () => require('@ai-sdk/openai-compatible') as typeof import('@ai-sdk/openai-compatible'),
};

/** A configured model behind the AI SDK's provider interface; none of them retries by itself (Tollgate's rule decides). */
export function createLanguageModel(entryName: string, entry: ModelEntry, environment: ModelEnvironment = {}): LanguageModelV4 {
  if (!isBuiltIn(entry)) return packageModel(entryName, entry, environment);
  const { env = process.env, fetch } = environment;
  switch (entry.provider) {
    case 'scripted':
      return new ScriptedLanguageModel();
    case 'openai':
      return providerPackages
        .openai()
        .createOpenAI({ apiKey: apiKey(entry.apiKeyEnv, entryName, env), baseURL: entry.baseURL, fetch })
        .chat(entry.model);
    case 'anthropic':
      return providerPackages
        .anthropic()
        .createAnthropic({ apiKey: apiKey(entry.apiKeyEnv, entryName, env), baseURL: entry.baseURL, fetch })(entry.model);
    case 'openai-compatible':
      return providerPackages
        .openaiCompatible()
        .createOpenAICompatible({
          name: entryName,
          baseURL: entry.baseURL,
          apiKey: entry.apiKeyEnv ? apiKey(entry.apiKeyEnv, entryName, env) : undefined,
          fetch,
          includeUsage: true,
        })
        .chatModel(entry.model);
  }
}

/** A scripted model playing exactly these steps, or its built-in plan. */
export function scriptedModel(script?: ScriptStep[]): LanguageModelV4 {
  return new ScriptedLanguageModel(script);
}

/**
 * The fetch a configured model's provider uses: every answer capped at the entry's
 * `maxResponseBytes` (else `model.maxResponseBytes`) while it is read, so an endless or oversized
 * stream stops at the cap instead of growing the worker's memory. The inner fetch is looked up at
 * each request (the environment's, else the global one).
 */
function modelFetch(entry: ModelEntry, config: TollgateConfig, inner: typeof globalThis.fetch | undefined): typeof globalThis.fetch {
  const maxBytes = ('maxResponseBytes' in entry ? entry.maxResponseBytes : undefined) ?? config.model.maxResponseBytes;
  return cappedFetch(maxBytes, (input, init) => (inner ?? globalThis.fetch)(input, init));
}

/**
 * Builds every configured model once, so a missing API key or package stops the worker before any
 * turn starts, and adds the models built in code (which bring their own fetch, uncapped); a name
 * may not be both.
 */
export function createConfiguredModels(
  config: TollgateConfig,
  environment: ModelEnvironment = {},
  codeModels: CodeModels = {},
): Map<string, AvailableModel> {
  const models = new Map<string, AvailableModel>(
    Object.entries(config.model.models).map(([name, entry]) => [
      name,
      {
        model: createLanguageModel(name, entry, {
          projectRoot: config.projectRoot,
          ...environment,
          fetch: modelFetch(entry, config, environment.fetch),
        }),
        entry,
      },
    ]),
  );
  for (const [name, model] of Object.entries(codeModels)) {
    if (models.has(name)) throw new ConfigError(`model "${name}" is both in the config's model list and among the models built in code`);
    models.set(name, { model: checkLanguageModel(model, `createWorker({ models }): model "${name}"`) });
  }
  return models;
}
