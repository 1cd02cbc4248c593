// `npm run build`: compiles Tollgate to JavaScript with its type declarations in dist/, copies the
// plain CommonJS converters and the web inbox's page, and prebuilds the workflow bundle of every worker variant into
// dist/workflow-bundles, so that a worker of the built package loads its bundle instead of running
// webpack as it starts. It runs on the Node.js that runs it (npm run build runs it on the pinned one).
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const started = Date.now();

rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
  cwd: root,
  stdio: 'inherit',
});
if (tsc.status !== 0) {
  console.error(`build: tsc -p tsconfig.build.json failed (exit ${tsc.status ?? tsc.signal}); dist/ is incomplete`);
  process.exit(tsc.status ?? 1);
}
copyFileSync(path.join(root, 'codec', 'converters.js'), path.join(dist, 'codec', 'converters.js'));
// The web inbox's page (HTML, its modules, its style) is served as it is.
cpSync(path.join(root, 'client', 'inbox', 'public'), path.join(dist, 'client', 'inbox', 'public'), { recursive: true });

// The bundles are built from the JavaScript just compiled, with the options a worker starting from source uses.
const require = createRequire(import.meta.url);
const { DefaultLogger, Runtime } = require('@temporalio/worker');
Runtime.install({ logger: new DefaultLogger('WARN') });
const { BUNDLE_VARIANTS, PREBUILT_BUNDLE_FOLDER, bundleTollgateWorkflows, variantFile } = require(
  path.join(dist, 'worker', 'workflow-bundle.js'),
);
mkdirSync(PREBUILT_BUNDLE_FOLDER, { recursive: true });
const sizes = [];
for (const variant of BUNDLE_VARIANTS) {
  const { code } = await bundleTollgateWorkflows(variant, new DefaultLogger('WARN'));
  const file = path.join(PREBUILT_BUNDLE_FOLDER, variantFile(variant));
  writeFileSync(file, code);
  sizes.push(`${variantFile(variant)} ${Math.round(statSync(file).size / 1024)} KiB`);
}
console.log(`build: dist/ written in ${((Date.now() - started) / 1000).toFixed(1)} s; workflow bundles: ${sizes.join(', ')}`);
