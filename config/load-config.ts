import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { loadClientConfigProfile, type ClientConfigProfile } from '@temporalio/envconfig';
import { ConfigError, describeIssue } from './config-error';
import { CONFIG_FILE_NAMES, findProject, findProjectRoot } from './find-project';
import { PACKAGE_ROOT } from './package-root';
import { configSchema, type TollgateConfig } from './config-schema';
import { resolveToolSourcePaths } from '../tools/tool-source-sections';
import { deploymentSchema } from '../worker/deployment-config';

export { ConfigError } from './config-error';
export { CONFIG_FILE_NAMES, findProject, findProjectRoot, type ProjectLocation } from './find-project';
export { PACKAGE_ROOT, PROJECT_ROOT } from './package-root';

/** The repository's own config file name (a user project may name its file `tollgate.config.yaml`). */
export const DEFAULT_CONFIG_FILE = 'temporal.config.yaml';

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

/**
 * Validates config data (as parsed from YAML) and fills in defaults; `source` names it in errors,
 * relative paths are read from `baseDir`, and `projectRoot` (default: the project of the working
 * directory) is where provider packages are loaded from.
 */
export function parseConfig(
  data: unknown,
  {
    source,
    baseDir,
    env = process.env,
    projectRoot = findProjectRoot(),
  }: { source: string; baseDir: string; env?: NodeJS.ProcessEnv; projectRoot?: string },
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
  // Without a corpus of its own, the read tools search the example corpus shipped in the package.
  const writtenCorpus = (data as { corpus?: unknown } | null | undefined)?.corpus;
  config.corpus = writtenCorpus === undefined ? path.join(PACKAGE_ROOT, 'examples', 'corpus') : resolve(config.corpus);
  config.temporal.devServer.dbFile = resolve(config.temporal.devServer.dbFile);
  config.temporal.devServer.logFile = resolve(config.temporal.devServer.logFile);
  config.store.sqliteFile = resolve(config.store.sqliteFile);
  config.inbox.passkeysFile = resolve(config.inbox.passkeysFile);
  config.approvals.standInsFile = resolve(config.approvals.standInsFile);
  for (const channel of Object.values(config.approvals.notify.channels))
    if (channel.type === 'email' && channel.smtp.caFile) channel.smtp.caFile = resolve(channel.smtp.caFile);
  resolveToolSourcePaths(config, resolve);
  return { ...config, temporalProfile, configFile: source, projectRoot };
}

/**
 * Reads and validates the config: `file`, else `TOLLGATE_CONFIG`, else `tollgate.config.yaml` or
 * `temporal.config.yaml` found from `cwd` up to its project's root (never inside `node_modules`);
 * with none, the embedded defaults, relative paths (`.tollgate/`) read from the project's root.
 */
export function loadConfig({
  file,
  env = process.env,
  cwd = process.cwd(),
}: { file?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): TollgateConfig {
  const project = file === undefined ? findProject({ cwd, env }) : { root: findProjectRoot(cwd), configFile: path.resolve(cwd, file) };
  const configFile = project.configFile;
  if (configFile === undefined) {
    const source = `the default config (no ${CONFIG_FILE_NAMES.join(' or ')} in ${project.root})`;
    return { ...parseConfig({}, { source, baseDir: project.root, env, projectRoot: project.root }), configFile: undefined };
  }
  if (!existsSync(configFile)) {
    const named = file === undefined ? ' (named by TOLLGATE_CONFIG)' : '';
    throw new ConfigError(
      `${configFile}: config file not found${named}; set TOLLGATE_CONFIG to an existing file, or unset it to use the project's own`,
    );
  }
  let data: unknown;
  try {
    data = parseYaml(readFileSync(configFile, 'utf8'));
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line})` : '';
    throw new ConfigError(`${configFile}${where}: not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  return parseConfig(data, { source: configFile, baseDir: path.dirname(configFile), env, projectRoot: project.root });
}
