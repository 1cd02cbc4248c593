// `npm run demo -- --delegate --approve`, as CI would run it: the demo starts its own embedded dev
// server (a config of the test's own, on free ports), the coordinator's turn asks the researcher
// subagent, whose send waits in the child turn; the demo finds it in the root's state, approves it
// there and prints the tree. One message is sent, by the child.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-demo-delegate-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('npm run demo -- --delegate', () => {
  it('runs a coordinator whose researcher subagent sends once, approved from the root, and prints the tree', async () => {
    const configFile = path.join(folder, 'tollgate.config.yaml');
    const workspace = path.join(folder, 'workspace');
    writeFileSync(
      configFile,
      [
        'temporal:',
        `  address: 127.0.0.1:${await freePort()}`,
        '  taskQueue: demo-delegate',
        '  devServer:',
        `    uiPort: ${await freePort()}`,
        `    dbFile: ${path.join(folder, 'temporal.db')}`,
        `    logFile: ${path.join(folder, 'dev-server.log')}`,
        `workspace: ${workspace}`,
        'store:',
        `  sqliteFile: ${path.join(folder, 'intents.db')}`,
        `corpus: ${path.join(PROJECT_ROOT, 'examples', 'corpus')}`,
        'inbox:',
        `  port: ${await freePort()}`,
        '',
      ].join('\n'),
    );
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(PROJECT_ROOT, 'client', 'demo', 'demo.ts'), '--delegate', '--approve', '--task-id', 'demo-tree-1'],
      { cwd: PROJECT_ROOT, env: { ...process.env, TOLLGATE_CONFIG: configFile, TEMPORAL_ADDRESS: '' }, timeout: 120_000 },
    );
    const root = /Started workflow (\S+) on task queue/.exec(stdout)?.[1];
    expect(root).toBeDefined();
    const child = `${root}-call-call-0-0`;
    // The wait was found at the root and decided at the child.
    expect(stdout).toContain(`Subagent coordinator → researcher (workflow ${child}, depth 1) waits for a decision:`);
    expect(stdout).toContain('Approval needed for call-2-0: send_message, asked by agent researcher');
    expect(stdout).toContain(`Decision accepted by ${child}: approve call-2-0.`);
    expect(stdout).toContain('Status: completed after 2 model steps');
    // The tree: the root, then its child with its workflow id, its calls and its answer.
    expect(stdout).toContain(`Tree:\ncoordinator  ${root}  completed\n└─ researcher  ${child}  completed  (call call-0-0: success)`);
    expect(stdout).toMatch(/call-2-0 +send_message +irreversible_write +success +- +1 /);
    expect(stdout).toContain('It was sent to the requester.');
    const messages = readdirSync(path.join(workspace, 'outbox'), { recursive: true }).filter((name) => String(name).endsWith('.json'));
    expect(messages).toHaveLength(1);
  }, 180_000);
});
