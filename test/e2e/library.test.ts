import { existsSync, readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/load-config';
import { main } from '../../examples/add-your-own-tool';
import * as tollgate from '../../index';
import * as testing from '../../testing';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { freePort } from '../../connection/ports';
import { quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';

let server: DevServer;

beforeAll(async () => {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-library-'));
  server = await startDevServer({
    address: `127.0.0.1:${await freePort()}`,
    namespace: 'default',
    dbFile: path.join(folder, 'temporal.db'),
    logFile: path.join(folder, 'server.log'),
  });
});

afterAll(async () => {
  await server?.stop();
});

describe('the library API', () => {
  it('exports what embedding Tollgate needs from one entry point', () => {
    const names = [
      'defineTool',
      'ToolOutcome',
      'createWorker',
      'TollgateClient',
      'builtInTools',
      'mcpToolSource',
      'configuredToolSources',
      'ToolSourceError',
      'loadConfig',
      'startDevServer',
    ] as const;
    const contract = [
      'agentTurn',
      'conversation',
      'stateQuery',
      'approvalSignal',
      'decideUpdate',
      'sendUpdate',
      'historyQuery',
      'AGENT_TURN_WORKFLOW_TYPE',
      'ERROR_CODES',
    ] as const;
    for (const name of [...names, ...contract]) expect(tollgate[name], name).toBeDefined();
    expect(tollgate.stateQuery.name).toBe('state');
    expect(tollgate.approvalSignal.name).toBe('approval');
  });

  it('documents every export of the entry point in one line, and re-exports no module wholesale', () => {
    const lines = readFileSync(path.join(PROJECT_ROOT, 'index.ts'), 'utf8').split('\n');
    const exports = lines.flatMap((line, index) => (line.startsWith('export ') ? [index] : []));
    expect(exports.length).toBeGreaterThan(10);
    for (const index of exports) expect(lines[index - 1], lines[index]).toMatch(/^\/\*\* .+ \*\/$/);
    expect(lines.filter((line) => /^export (type )?\*/.test(line))).toEqual([]);
  });

  it('exports the testing kit as tollgate/testing beside the root, each export documented in one line', () => {
    const packageJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8'));
    // The built package's entry points, each compiled from the source entry of the same path.
    expect(packageJson.exports).toMatchObject({
      '.': { types: './dist/index.d.ts', default: './dist/index.js' },
      './testing': { types: './dist/testing/index.d.ts', default: './dist/testing/index.js' },
      './workflows': { types: './dist/workflows/index.d.ts', default: './dist/workflows/index.js' },
    });
    expect(packageJson.main).toBe('./dist/index.js');
    for (const entry of Object.values(packageJson.exports as Record<string, string | { default: string }>)) {
      if (typeof entry === 'string') continue;
      const source = entry.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts');
      expect(existsSync(path.join(PROJECT_ROOT, source)), source).toBe(true);
    }
    for (const name of ['createTestEnvironment', 'script', 'expectScriptFollowed', 'ScriptNotFollowedError'] as const) {
      expect(testing[name], name).toBeDefined();
    }
    const lines = readFileSync(path.join(PROJECT_ROOT, 'testing', 'index.ts'), 'utf8').split('\n');
    const exports = lines.flatMap((line, index) => (line.startsWith('export ') ? [index] : []));
    expect(exports.length).toBeGreaterThan(4);
    for (const index of exports) expect(lines[index - 1], lines[index]).toMatch(/^\/\*\* .+ \*\/$/);
  });

  it('runs the README\'s "add your own tool" example, which is the file examples/add-your-own-tool.ts', async () => {
    const readme = readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
    const example = readFileSync(path.join(PROJECT_ROOT, 'examples', 'add-your-own-tool.ts'), 'utf8');
    expect(readme).toContain(`\`\`\`ts\n${example}\`\`\``);
    const result = await main(testConfig({ temporal: { address: server.address } }));
    expect(result).toMatchObject({ status: 'completed', answer: 'Counted.' });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'days_until', effect: 'read', status: 'success', executions: 1 })]);
  });
});
