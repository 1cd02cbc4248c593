import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Tollgate's own package: the folder holding its package.json (above `dist/` when it runs built).
 * Its own files (the example corpus, the setup script) are found here; a user's config and state
 * never are (see `findProject`). A part of config/ every layer may import: it reads no config.
 */
export const PACKAGE_ROOT = packageRoot(__dirname);

/** The same folder as {@link PACKAGE_ROOT}, by the name the repository's tests and benchmarks use. */
export const PROJECT_ROOT = PACKAGE_ROOT;

function packageRoot(from: string): string {
  for (let folder = from; ; folder = path.dirname(folder)) {
    if (existsSync(path.join(folder, 'package.json'))) return folder;
    if (path.dirname(folder) === folder)
      throw new Error(`no package.json at or above ${from}: Tollgate's files are not where its package put them`);
  }
}
