import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { loadClientConfigProfile, type ClientConfigProfile } from '@temporalio/envconfig';
import { ConfigError, describeIssue } from './config-error';
import { configSchema, type TollgateConfig } from './config-schema';
import { resolveToolSourcePaths } from '../tools/tool-source-sections';
import { deploymentSchema } from '../worker/deployment-config';

export { ConfigError } from './config-error';

/** The config file Tollgate reads when `TOLLGATE_CONFIG` names none. */
export const DEFAULT_CONFIG_FILE = 'temporal.config.yaml';

/** Where the project lives: the folder holding Tollgate's package.json (above `dist/` when Tollgate runs built). */
export const PROJECT_ROOT = packageRoot(__dirname);

function packageRoot(from: string): string {
  for (let folder = from; ; folder = path.dirname(folder)) {
    if (existsSync(path.join(folder, 'package.json'))) return folder;
    if (path.dirname(folder) === folder)
      throw new Error(`no package.json at or above ${from}: Tollgate's files are not where its package put them`);
  }
}

/**
 * The Temporal client profile as Temporal's other tools read it: `TEMPORAL_PROFILE` (default
 * "default") from `temporal.toml` (`TEMPORAL_CONFIG_FILE`, else the user's config folder), with
 * `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*` and
 * `TEMPORAL_GRPC_META_*` over it.
 */
export function loadTemporalProfile(source: string, env: NodeJS.ProcessEnv): ClientConfigProfile {
  const variables = Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  try {
    return loadClientConfigProfile({ profile: env.TEMPORAL_PROFILE, overrideEnvVars: variables });
  } catch (error) {
    throw new ConfigError(`${source}: the Temporal profile cannot be loaded: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** Validates config data (as parsed from YAML) and fills in defaults; `source` names it in errors. */
export function parseConfig(
  data: unknown,
  { source, baseDir, env = process.env }: { source: string; baseDir: string; env?: NodeJS.ProcessEnv },
): TollgateConfig {
  const result = configSchema.safeParse(data ?? {});
  if (!result.success) {
    throw new ConfigError(`${source}: ${result.error.issues.map(describeIssue).join('; ')}`);
  }
  const config = result.data;
  const temporalProfile = loadTemporalProfile(source, env);
  // The YAML is layered on top of the Temporal profile; TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE win over both.
  const written = ((data ?? {}) as { temporal?: Record<string, unknown> }).temporal ?? {};
  config.temporal.address =
    env.TEMPORAL_ADDRESS || (written.address === undefined ? temporalProfile.address : undefined) || config.temporal.address;
  config.temporal.namespace =
    env.TEMPORAL_NAMESPACE || (written.namespace === undefined ? temporalProfile.namespace : undefined) || config.temporal.namespace;
  // A deploy pipeline names its build (a commit, a release) without editing the file.
  if (env.TOLLGATE_BUILD_ID !== undefined) {
    const buildId = deploymentSchema.shape.buildId.safeParse(env.TOLLGATE_BUILD_ID);
    if (!buildId.success) throw new ConfigError(`TOLLGATE_BUILD_ID: ${buildId.error.issues[0].message}`);
    config.temporal.deployment.buildId = buildId.data;
  }
  if (!(config.model.default in config.model.models)) {
    throw new ConfigError(`${source}: model.default: "${config.model.default}" is not a key of model.models`);
  }
  const resolve = (folder: string) => path.resolve(baseDir, folder);
  config.workspace = resolve(config.workspace);
  config.corpus = resolve(config.corpus);
  config.temporal.devServer.dbFile = resolve(config.temporal.devServer.dbFile);
  config.temporal.devServer.logFile = resolve(config.temporal.devServer.logFile);
  config.store.sqliteFile = resolve(config.store.sqliteFile);
  config.inbox.passkeysFile = resolve(config.inbox.passkeysFile);
  resolveToolSourcePaths(config, resolve);
  return { ...config, temporalProfile, configFile: source, projectRoot: PROJECT_ROOT };
}

/** Reads and validates the config file: `TOLLGATE_CONFIG`, else `temporal.config.yaml` at the project root. */
export function loadConfig({ file, env = process.env }: { file?: string; env?: NodeJS.ProcessEnv } = {}): TollgateConfig {
  const configFile = path.resolve(file ?? env.TOLLGATE_CONFIG ?? path.join(PROJECT_ROOT, DEFAULT_CONFIG_FILE));
  if (!existsSync(configFile)) {
    throw new ConfigError(
      `${configFile}: config file not found; set TOLLGATE_CONFIG to an existing file or restore ${DEFAULT_CONFIG_FILE}`,
    );
  }
  let data: unknown;
  try {
    data = parseYaml(readFileSync(configFile, 'utf8'));
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line})` : '';
    throw new ConfigError(`${configFile}${where}: not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  return parseConfig(data, { source: configFile, baseDir: path.dirname(configFile), env });
}
