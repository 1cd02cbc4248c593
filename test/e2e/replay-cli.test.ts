import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/load-config';
import { HISTORY_FOLDER, RECORDED_HISTORY } from '../helpers/histories';

/** Runs `tollgate` with these arguments; returns its exit code and output. */
async function tollgate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), ...args], {
      cwd: PROJECT_ROOT,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function historyFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    return entry.isDirectory() ? historyFiles(full) : entry.name.endsWith('.json') ? [full] : [];
  });
}

// A copy of the workflows beside the real ones (their relative imports still resolve), with one change:
// a tool call is scheduled right after the turn's settings are read, where the recorded turns schedule their first model step.
const changed = path.join(PROJECT_ROOT, `workflows-changed-${process.pid}`);
afterAll(() => rmSync(changed, { recursive: true, force: true }));

// Each run of the command bundles the workflow code it replays on, which takes tens of seconds on a busy machine.
const BUNDLING_TIMEOUT = 300_000;

describe('tollgate replay', () => {
  it(
    'replays every recorded history on the current workflow code: exit code 0',
    async () => {
      const files = historyFiles(HISTORY_FOLDER);
      expect(files.length).toBeGreaterThanOrEqual(6);
      const { code, stdout } = await tollgate(['replay', ...files]);
      expect(
        stdout
          .trim()
          .split('\n')
          .filter((line) => line.startsWith('replays  ')).length,
      ).toBe(files.length);
      expect(stdout).toContain(`${files.length} history(ies) replayed: ${files.length} replay, 0 would break.`);
      expect(code).toBe(0);
    },
    BUNDLING_TIMEOUT,
  );

  it(
    'catches a deliberately reordered workflow: names the history and its first diverging command, exit code 1',
    async () => {
      cpSync(path.join(PROJECT_ROOT, 'workflows'), changed, { recursive: true });
      const turnFile = path.join(changed, 'agent-turn.ts');
      const source = readFileSync(turnFile, 'utf8');
      // The statement that reads the turn's settings (on one line or several), whatever it names them: the change puts a tool call after it.
      const settings = /^ {2}const [^\n]* = await settingsFor\([^;]*\);\n/m.exec(source)?.[0];
      expect(settings, 'the settings line of workflows/agent-turn.ts').toBeDefined();
      const early =
        "  await proxyActivities<Activities>({ startToCloseTimeout: '1 minute' }).runTool({ taskId, callId: 'early', tool: 'search_local_sources', args: { query: input.prompt } });\n";
      // The imports the change needs, where the file does not hold them already.
      const imports = [
        /\bproxyActivities\b[^;]*from '@temporalio\/workflow'/.test(source)
          ? ''
          : "import { proxyActivities } from '@temporalio/workflow';\n",
        /\bActivities\b[^;]*from '\.\.\/common\/activity-types'/.test(source)
          ? ''
          : "import type { Activities } from '../common/activity-types';\n",
      ].join('');
      writeFileSync(turnFile, imports + source.replace(settings!, settings! + early));
      const { code, stdout } = await tollgate(['replay', '--workflows', changed, RECORDED_HISTORY]);
      expect(stdout).toMatch(new RegExp(`^BREAKS +${RECORDED_HISTORY.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(.+\\): .*modelStep`, 'm'));
      expect(stdout).toContain("'runTool'");
      expect(stdout).toContain('1 history(ies) replayed: 0 replay, 1 would break.');
      expect(code).toBe(1);

      const json = await tollgate(['--json', 'replay', '--workflows', changed, RECORDED_HISTORY]);
      expect(JSON.parse(json.stdout)).toEqual([
        { source: RECORDED_HISTORY, workflowId: expect.any(String), verdict: 'breaks', message: expect.stringContaining('modelStep') },
      ]);
      expect(json.code).toBe(1);
    },
    BUNDLING_TIMEOUT,
  );

  it(
    'names a file that is not a history, and refuses files together with --query',
    async () => {
      const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-replay-'));
      const notHistory = path.join(folder, 'config.json');
      writeFileSync(notHistory, '{"temporal": {}}');
      const bad = await tollgate(['replay', notHistory]);
      expect(bad.stderr).toContain(`tollgate: ${notHistory}: not a workflow history (expected the "events" array`);
      expect(bad.code).toBe(1);
      const both = await tollgate(['replay', RECORDED_HISTORY, '--query', 'TollgateAwaitingApproval = true']);
      expect(both.stderr).toContain('tollgate: give history files or --query, not both and not neither');
      expect(both.code).toBe(1);
    },
    BUNDLING_TIMEOUT,
  );
});
