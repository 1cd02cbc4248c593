import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SHELL_LIMITS } from '../../common/defaults';
import { PROJECT_ROOT } from '../../config/load-config';

const SECRET = 'tollgate-fake-secret-91c4e7a2';
const NOBODY = 65534;
const AS_NOBODY = ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups'];

// Why the sandbox cannot be tried as an unprivileged user here, or undefined when it can.
function whyNotHere(): string | undefined {
  if (process.getuid?.() !== 0) return 'the tests already run as an unprivileged user, so the other shell tests cover it';
  const users = readFileSync('/etc/passwd', 'utf8').split('\n');
  if (!users.some((line) => line.split(':')[2] === String(NOBODY))) return 'no user with uid 65534';
  if (spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status !== 0) return 'setpriv (util-linux) is not installed';
  // The user runs the project's own code, so it must be able to reach it (a clone inside a folder only root may enter cannot be).
  const reachable = spawnSync('setpriv', [...AS_NOBODY, 'test', '-r', path.join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx')], {
    stdio: 'ignore',
  });
  if (reachable.status !== 0)
    return `uid ${NOBODY} cannot read the project at ${path.basename(PROJECT_ROOT)} (a folder on the way is closed to it)`;
  const sandbox = ['bwrap', '--unshare-all', '--unshare-user', '--ro-bind', '/', '/', 'true'];
  const probe = spawnSync('setpriv', [...AS_NOBODY, ...sandbox], { stdio: 'ignore' });
  if (probe.status !== 0) return 'bubblewrap cannot create a user namespace as an unprivileged user on this kernel';
  return undefined;
}

const reason = whyNotHere();
const parents: string[] = [];

afterAll(() => {
  for (const parent of parents) spawnSync('rm', ['-rf', parent]);
});

describe('the shell sandbox run by an unprivileged user (uid 65534)', () => {
  it.skipIf(reason !== undefined)(`holds the same guarantees${reason ? ` (skipped: ${reason})` : ''}`, () => {
    const parent = mkdtempSync(path.join(os.tmpdir(), 'tollgate-as-user-'));
    parents.push(parent);
    const workspace = path.join(parent, 'workspace');
    const outside = path.join(parent, 'outside');
    mkdirSync(workspace);
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'kept.txt'), 'kept');
    // The user owns the folder beside the workspace too: only the sandbox keeps the command from writing there.
    for (const folder of [parent, workspace, outside, path.join(outside, 'kept.txt')]) chownSync(folder, NOBODY, NOBODY);
    const tsx = path.join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx');
    const script = path.join(PROJECT_ROOT, 'test', 'hostile', 'shell-as-user.ts');
    const child = spawnSync('setpriv', [...AS_NOBODY, tsx, script, workspace], {
      cwd: workspace,
      env: { PATH: process.env.PATH, HOME: workspace, TOLLGATE_FAKE_WORKER_SECRET: SECRET },
      encoding: 'utf8',
      timeout: 100_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    const reportLine = child.stdout.split('\n').find((line) => line.startsWith('{"uid"'));
    expect(reportLine, `the script printed no report; it wrote: ${child.stderr.slice(-2_000)}`).toBeDefined();
    const report = JSON.parse(reportLine!);

    expect(report.uid).toBe(NOBODY);
    expect(report.lines.join('\n')).toMatch(/64 processes \(RLIMIT_NPROC in the sandbox/);
    expect(report.identity).toMatch(/"status":"success"/);
    for (const line of JSON.parse(report.identity).data.output.trim().split('\n').slice(1)) expect(line).toMatch(/:\s+0{16}$/);
    expect(report.environment).not.toContain(SECRET);
    expect(report.environment).not.toContain(Buffer.from(SECRET).toString('base64').slice(0, 24));
    expect(existsSync(`/var/tmp/tollgate-as-user-${report.pid}`)).toBe(false);
    expect(existsSync('/etc/tollgate-as-user')).toBe(false);
    expect(readdirSync(outside)).toEqual(['kept.txt']);
    expect(report.forkBomb).toMatch(/shell timed out after 4000 ms/);
    expect(report.forkBombMs).toBeLessThan(7_000);
    // The script's own helpers (tsx's esbuild service) are its descendants too.
    expect(report.peakProcesses).toBeGreaterThan(10);
    expect(report.peakProcesses).toBeLessThanOrEqual(SHELL_LIMITS.processes + 10);
    expect(report.output).toMatch(/output passed the limit of 1000000 bytes/);
    expect(report.fill).toMatch(/SIGXFSZ/);
    expect(report.bigBytes).toBeLessThanOrEqual(SHELL_LIMITS.fileSizeBytes);
    expect(report.after).toMatch(/still-serving/);
    expect(report.worstDelayMs).toBeLessThan(500);
    expect(child.status).toBe(0);
  });
});
