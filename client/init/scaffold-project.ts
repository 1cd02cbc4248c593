import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../config/load-config';
import { TollgateError } from '../../common/tollgate-error';

/** Where the files `tollgate init` writes come from: shipped in the package beside this code. */
export const TEMPLATE_FOLDER = path.join(PACKAGE_ROOT, 'client', 'init', 'templates');

/** The scripts `tollgate init` adds to package.json, each a name and its command. */
export const PROJECT_SCRIPTS: Record<string, string> = {
  // --experimental-strip-types: Node.js runs the TypeScript files as they are (a no-op from 22.18 on).
  turn: 'node --experimental-strip-types src/turn.mts',
  worker: 'node --experimental-strip-types src/worker.mts',
  test: 'node --experimental-strip-types --test test/*.test.mts',
};

/** The packages the scaffold's files import, which the project must depend on. */
export const PROJECT_DEPENDENCIES = ['tollgate', 'ai', 'zod'] as const;

/** The line `.gitignore` gets: Tollgate's state folder stays out of git. */
const IGNORED_STATE = '.tollgate/';

/** What `tollgate init` did: the files it wrote, what it added to the existing ones, and what is still missing. */
export interface ScaffoldReport {
  folder: string;
  written: string[];
  /** Existing files it added to (package.json scripts, a .gitignore line). */
  updated: string[];
  /** Dependencies the scaffold imports that package.json does not list: `npm install` them. */
  missingDependencies: string[];
}

/** A file `tollgate init` would have to overwrite, or a script it would replace: nothing was written. */
export class ScaffoldConflictError extends TollgateError {
  static override readonly marker = 'tollgate.error.ScaffoldConflictError';
  override name = 'ScaffoldConflictError';
}

/** The template files, as paths relative to the template folder; `gitignore` becomes `.gitignore` (npm never packs a `.gitignore`). */
function templateFiles(folder = TEMPLATE_FOLDER, prefix = ''): string[] {
  return readdirSync(path.join(folder, prefix), { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? templateFiles(folder, path.join(prefix, entry.name)) : [path.join(prefix, entry.name)]))
    .sort();
}

const targetName = (template: string) => (template === 'gitignore' ? '.gitignore' : template);

/**
 * Scaffolds a project in `folder`: the config, an agent with a read and an irreversible tool, a
 * worker, a script that runs a turn, a test with the testing kit, package.json scripts and
 * `.tollgate/` in .gitignore. It overwrites nothing: when any of its files exists, or package.json
 * has one of its scripts with another command, it writes nothing and names them all.
 */
export function scaffoldProject(folder: string): ScaffoldReport {
  const templates = templateFiles();
  const conflicts = templates
    .map(targetName)
    .filter((file) => file !== '.gitignore' && existsSync(path.join(folder, file)))
    .map((file) => `${file} exists`);
  const packageFile = path.join(folder, 'package.json');
  let packageJson: Record<string, unknown> = {
    name: path
      .basename(folder)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-'),
    version: '0.1.0',
    private: true,
  };
  if (existsSync(packageFile)) {
    try {
      packageJson = JSON.parse(readFileSync(packageFile, 'utf8')) as Record<string, unknown>;
    } catch (error) {
      throw new ScaffoldConflictError(`package.json is not valid JSON (${(error as Error).message}); fix it, then run tollgate init again`);
    }
  }
  const scripts = (packageJson.scripts ?? {}) as Record<string, string>;
  for (const [name, command] of Object.entries(PROJECT_SCRIPTS)) {
    // npm init's placeholder test script is replaced; any other command of the user's is not.
    const placeholder = name === 'test' && /no test specified/.test(scripts[name] ?? '');
    if (scripts[name] !== undefined && scripts[name] !== command && !placeholder) conflicts.push(`package.json has a "${name}" script`);
  }
  if (conflicts.length > 0) {
    throw new ScaffoldConflictError(
      `${conflicts.join(', ')}; tollgate init overwrites nothing, so it wrote nothing (move them aside, or run it in an empty folder)`,
    );
  }

  const written: string[] = [];
  const updated: string[] = [];
  for (const template of templates) {
    const target = path.join(folder, targetName(template));
    const text = readFileSync(path.join(TEMPLATE_FOLDER, template), 'utf8');
    if (template === 'gitignore' && existsSync(target)) {
      const current = readFileSync(target, 'utf8');
      if (!current.split('\n').some((line) => ['.tollgate', '.tollgate/', '/.tollgate', '/.tollgate/'].includes(line.trim()))) {
        writeFileSync(target, `${current}${current === '' || current.endsWith('\n') ? '' : '\n'}${IGNORED_STATE}\n`);
        updated.push('.gitignore');
      }
      continue;
    }
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, text, { flag: 'wx' });
    written.push(targetName(template));
  }
  packageJson.scripts = { ...scripts, ...PROJECT_SCRIPTS };
  const existed = existsSync(packageFile);
  writeFileSync(packageFile, `${JSON.stringify(packageJson, null, 2)}\n`);
  (existed ? updated : written).push('package.json');

  const listed = { ...(packageJson.dependencies as object), ...(packageJson.devDependencies as object) };
  const missingDependencies = PROJECT_DEPENDENCIES.filter((name) => !(name in listed));
  return { folder, written, updated, missingDependencies };
}
