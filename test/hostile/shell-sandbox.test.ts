import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../intents/sqlite-store';
import { createRunTool } from '../../activities/boundary/run-tool';
import { createToolRegistry } from '../../tools/tool-registry';
import { bubblewrapAvailable, shellTool } from '../../tools/built-in/shell';
import { PROJECT_ROOT } from '../../config/load-config';
import { runToolOnce, type FlatBoundaryResult } from '../helpers/run-tool-once';

const SECRET = 'tollgate-fake-secret-7f3a9c1e';

function sandboxedShell() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-'));
  const registry = createToolRegistry({ tools: [shellTool({ workspace: root, sandbox: true })] });
  const runTool = createRunTool({ registry, store: openSqliteStore(':memory:') });
  let calls = 0;
  const run = (command: string): Promise<FlatBoundaryResult> =>
    runToolOnce(runTool, { taskId: 'hostile', callId: `call-${calls++}`, tool: 'shell', args: { command } });
  return { root, run };
}

describe('the shell sandbox against a hostile command, as the worker user (root in CI)', () => {
  beforeEach(() => {
    process.env.TOLLGATE_FAKE_WORKER_SECRET = SECRET;
  });
  afterEach(() => {
    delete process.env.TOLLGATE_FAKE_WORKER_SECRET;
  });

  it('has bubblewrap with user namespaces here', () => {
    expect(bubblewrapAvailable(), 'bubblewrap must be installed and able to create a user namespace').toBe(true);
  });

  it('cannot remount the system writable, nor write to /var/tmp or /etc', async () => {
    const { run } = sandboxedShell();
    const marker = `tollgate-hostile-${process.pid}`;
    const result = await run(
      `mount -o remount,bind,rw / ; mount -o remount,rw /usr ; touch /var/tmp/${marker} /etc/${marker} /usr/${marker}; exit 0`,
    );
    expect(result.status).toBe('success');
    expect(existsSync(`/var/tmp/${marker}`)).toBe(false);
    expect(existsSync(`/etc/${marker}`)).toBe(false);
    expect(existsSync(`/usr/${marker}`)).toBe(false);
  });

  it('runs without any capability', async () => {
    const { run } = sandboxedShell();
    const result = await run('grep -E "^Cap(Prm|Eff|Bnd|Amb):" /proc/self/status');
    expect(result.status).toBe('success');
    for (const line of String((result.data as { output: string }).output)
      .trim()
      .split('\n'))
      expect(line).toMatch(/:\s+0{16}$/);
  });

  it('sees none of the worker environment, encoded or not', async () => {
    const { run } = sandboxedShell();
    const result = await run('env; env | base64 -w0; cat /proc/1/environ 2>/dev/null | base64 -w0; exit 0');
    const output = String((result.data as { output: string }).output);
    expect(result.status).toBe('success');
    expect(output).not.toContain(SECRET);
    expect(output).not.toContain(Buffer.from(SECRET).toString('base64').slice(0, 24));
    const names = output
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => line.split('=')[0])
      .sort();
    expect(names.filter((name) => !['PWD', 'SHLVL', '_'].includes(name))).toEqual(['HOME', 'LANG', 'PATH']);
  });

  it("cannot read the project's state folder or the dev server's database", async () => {
    const { run } = sandboxedShell();
    const state = path.join(PROJECT_ROOT, '.tollgate', 'state');
    const result = await run(
      `ls ${state} ; cat ${path.join(state, 'temporal.db')} | head -c 100; ls ${PROJECT_ROOT}; ls /root /home 2>&1; test ! -e ${PROJECT_ROOT}`,
    );
    expect(result).toMatchObject({ status: 'success' });
  });

  it('has no network', async () => {
    const { run } = sandboxedShell();
    const result = await run('cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "');
    expect(String((result.data as { output: string }).output).trim()).toBe('lo');
  });

  it('does not leave a background process behind', async () => {
    const { root, run } = sandboxedShell();
    await run('(sleep 2; touch late.txt) >/dev/null 2>&1 & echo started');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(readdirSync(root)).toEqual([]);
  });
});
