// The commands that need no shared server or worker: key generation, every command's help, and the
// dev server's own lifecycle (which starts a server of its own). Apart from test/e2e/cli.test.ts, so
// that the two files run side by side.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseApproverPublicKeys, parseApproverSigningKey } from '../../common/approver-keys';
import { publicKeyOf } from '../../common/signed-decision';
import { PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';

/** Runs the `tollgate` binary with a config of its own; returns its exit code and output. */
async function tollgate(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TEMPORAL_ADDRESS: '', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('the tollgate CLI without a server', () => {
  it('generates an approver key pair as the two environment entries, and names a bad key name in one line', async () => {
    const text = await tollgate(['keys', 'generate', 'ops-lead']);
    expect(text.code).toBe(0);
    const [publicEntry, privateEntry] = text.stdout.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
    const { keyId, privateKey } = parseApproverSigningKey(privateEntry, 'private entry');
    expect(keyId).toBe('ops-lead');
    const derived = Buffer.from(publicKeyOf(privateKey)).toString('base64');
    expect(parseApproverPublicKeys(publicEntry, 'public entry')).toEqual({ 'ops-lead': derived });
    const json = await tollgate(['--json', 'keys', 'generate', 'ops-lead']);
    const entry = expect.stringMatching(/^ops-lead:/);
    expect(JSON.parse(json.stdout)).toEqual({ name: 'ops-lead', publicEntry: entry, privateEntry: entry });
    expect(JSON.parse(json.stdout).privateEntry).not.toBe(privateEntry);
    const bad = await tollgate(['keys', 'generate', 'ops lead']);
    const why = 'key name "ops lead" may hold only letters, digits, ".", "_", "@" and "-" (at most 64)';
    expect(bad).toMatchObject({ code: 1, stderr: `tollgate: ${why}\n` });
  });

  it('prints help for every command', async () => {
    for (const command of [
      'run',
      'start',
      'status',
      'follow',
      'inbox',
      'approve',
      'deny',
      'history',
      'worker',
      'server',
      'keys',
      'deploy',
    ]) {
      const help = await tollgate([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`Usage: tollgate ${command}`);
    }
  }, 300_000);
});

describe('tollgate server', () => {
  it('starts the dev server in the background, reports it, and stops it', async () => {
    const own = mkdtempSync(path.join(os.tmpdir(), 'tollgate-cli-server-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    const ownConfig = path.join(own, 'tollgate.yaml');
    writeFileSync(
      ownConfig,
      [
        'temporal:',
        `  address: 127.0.0.1:${port}`,
        '  devServer:',
        `    uiPort: ${uiPort}`,
        `    dbFile: ${path.join(own, 'temporal.db')}`,
        `    logFile: ${path.join(own, 'server.log')}`,
        '',
      ].join('\n'),
    );
    const env = { TOLLGATE_CONFIG: ownConfig };
    const started = await tollgate(['--json', 'server', 'start'], env);
    expect(started.code).toBe(0);
    const { pid } = JSON.parse(started.stdout) as { pid: number };
    try {
      expect(await tollgate(['server', 'status'], env)).toMatchObject({
        code: 0,
        stdout: `A Temporal server answers at 127.0.0.1:${port} (dev server pid ${pid}).\n`,
      });
      expect((await tollgate(['server', 'start'], env)).stdout).toBe(
        `A Temporal server already answers at 127.0.0.1:${port}; nothing started.\n`,
      );
      expect(await tollgate(['server', 'stop'], env)).toMatchObject({ code: 0, stdout: `Stopped the Temporal dev server (pid ${pid}).\n` });
      expect(await tollgate(['server', 'status'], env)).toMatchObject({
        code: 1,
        stdout: `No Temporal server answers at 127.0.0.1:${port}.\n`,
      });
      expect((await tollgate(['server', 'stop'], env)).code).toBe(1);
    } finally {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already stopped, as it should be.
      }
    }
  });
});
