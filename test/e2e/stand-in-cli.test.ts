// `tollgate stand-in`: an approver names a stand-in for a period, signed by their own key, and the statement verifies.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { generateApproverKeyPair, parseApproverPublicKeys } from '../../common/approver-keys';
import { standInProblem } from '../../common/stand-in';
import { PROJECT_ROOT } from '../../config/load-config';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-stand-in-cli-'));
const standInsFile = path.join(folder, 'state', 'stand-ins.json');
const configFile = path.join(folder, 'tollgate.config.yaml');
writeFileSync(configFile, `approvals:\n  privateKeyEnv: TOLLGATE_STAND_IN_TEST_KEY\n  standInsFile: ${JSON.stringify(standInsFile)}\n`);
const alice = generateApproverKeyPair('alice');

/** Runs the `tollgate` binary with the test's config and alice's key; returns its exit code and output. */
async function tollgate(args: string[], env: Record<string, string> = { TOLLGATE_STAND_IN_TEST_KEY: alice.privateEntry }) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TEMPORAL_ADDRESS: '', TOLLGATE_CONFIG: configFile, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('tollgate stand-in', () => {
  it('signs a statement by the approver key, records it, lists it; the statement verifies, and an altered one does not', async () => {
    const added = await tollgate(['stand-in', 'add', 'bob', '--for', '8h']);
    expect(added.stderr).toBe('');
    expect(added.stdout).toMatch(/^bob may decide in place of alice from \S+ until \S+\.\n/);
    const { standIns } = JSON.parse(readFileSync(standInsFile, 'utf8'));
    expect(standIns).toEqual([expect.objectContaining({ approver: 'alice', standIn: 'bob' })]);
    expect(Date.parse(standIns[0].until) - Date.parse(standIns[0].from)).toBe(8 * 3_600_000);
    const publicKeys = parseApproverPublicKeys(alice.publicEntry, 'public entry');
    expect(standInProblem(standIns[0], publicKeys)).toBeUndefined();
    expect(standInProblem({ ...standIns[0], standIn: 'mallory' }, publicKeys)).toBe('the signature does not verify with key "alice"');
    expect(standInProblem({ ...standIns[0], until: standIns[0].from }, publicKeys)).toBe('until must be later than from');
    const listed = await tollgate(['--json', 'stand-in', 'list']);
    expect(JSON.parse(listed.stdout)).toEqual(standIns);
  });

  it('refuses, in one line and sending nothing: oneself, no period, a bad duration, no approver key', async () => {
    const cases: Array<[string[], RegExp, Record<string, string>?]> = [
      [['stand-in', 'add', 'alice', '--for', '1h'], /alice cannot stand in for themselves/],
      [['stand-in', 'add', 'bob'], /give either --until <time> or --for <duration>/],
      [['stand-in', 'add', 'bob', '--for', 'soon'], /--for must be a duration such as 3 days or 8h, got "soon"/],
      [
        ['stand-in', 'add', 'bob', '--from', '2026-01-02T00:00:00Z', '--until', '2026-01-01T00:00:00Z'],
        /--until must be later than --from/,
      ],
      [
        ['stand-in', 'add', 'bob', '--for', '1h'],
        /approvals\.privateKeyEnv: the environment variable TOLLGATE_STAND_IN_TEST_KEY is not set/,
        {},
      ],
    ];
    for (const [args, why, env] of cases) {
      const before = readFileSync(standInsFile, 'utf8');
      const result = await tollgate(args, env);
      expect(result.code).not.toBe(0);
      expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(why)]);
      expect(readFileSync(standInsFile, 'utf8')).toBe(before);
    }
  });
});
