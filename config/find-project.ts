import { existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from './config-error';

/** The config file names looked for in each folder, in this order: a user project's own name first, then the repository's. */
export const CONFIG_FILE_NAMES = ['tollgate.config.yaml', 'temporal.config.yaml'] as const;

/** The project a command runs in, and the config file it reads (none: the embedded defaults apply). */
export interface ProjectLocation {
  /** The nearest folder at or above the start holding a package.json (the start itself when none does); `.tollgate/` lives here. */
  root: string;
  /** The config file: `TOLLGATE_CONFIG`, else the first of {@link CONFIG_FILE_NAMES} from the start up to `root`. */
  configFile?: string;
  /** How the config file was found, for messages. */
  foundBy: 'TOLLGATE_CONFIG' | 'search' | 'none';
}

/**
 * Where a search from `folder` starts: the folder itself, or, when it lies inside a `node_modules`
 * folder, the folder holding the outermost `node_modules`, so that an installed package's own files
 * are never taken for the project's.
 */
export function outsideNodeModules(folder: string): string {
  const absolute = path.resolve(folder);
  const parts = absolute.split(path.sep);
  const first = parts.indexOf('node_modules');
  return first === -1 ? absolute : parts.slice(0, first).join(path.sep) || path.sep;
}

/** The nearest folder at or above `start` (outside `node_modules`) holding a package.json; `start` itself when none does. */
export function findProjectRoot(start = process.cwd()): string {
  const from = outsideNodeModules(start);
  for (let folder = from; ; folder = path.dirname(folder)) {
    if (existsSync(path.join(folder, 'package.json'))) return folder;
    if (path.dirname(folder) === folder) return from;
  }
}

/**
 * The project a command run in `cwd` belongs to and its config file: `TOLLGATE_CONFIG` when set
 * (relative to `cwd`), else `tollgate.config.yaml` or `temporal.config.yaml` in `cwd` or a folder
 * above it, up to and including the project's root (the nearest folder with a package.json), never
 * inside `node_modules`. Both names in one folder is an error naming both.
 */
export function findProject({ cwd = process.cwd(), env = process.env }: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ProjectLocation {
  const root = findProjectRoot(cwd);
  const named = env.TOLLGATE_CONFIG?.trim();
  if (named) return { root, configFile: path.resolve(cwd, named), foundBy: 'TOLLGATE_CONFIG' };
  for (let folder = outsideNodeModules(cwd); ; folder = path.dirname(folder)) {
    const present = CONFIG_FILE_NAMES.map((name) => path.join(folder, name)).filter((file) => existsSync(file));
    if (present.length > 1) {
      throw new ConfigError(
        `${folder} holds both ${CONFIG_FILE_NAMES.join(' and ')}; keep one of them, or name the one to read with TOLLGATE_CONFIG`,
      );
    }
    if (present.length === 1) return { root, configFile: present[0], foundBy: 'search' };
    if (folder === root || path.dirname(folder) === folder) return { root, foundBy: 'none' };
  }
}
