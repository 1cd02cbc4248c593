import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../config/load-config';
import { main } from '../examples/add-your-own-tool';
import * as tollgate from '../index';
import { startDevServer, type DevServer } from '../server/dev-server';
import { freePort } from '../connection/ports';
import { quietRuntime } from './helpers/servers';
import { testConfig } from './helpers/test-config';

let server: DevServer;

beforeAll(async () => {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-library-'));
  server = await startDevServer({ address: `127.0.0.1:${await freePort()}`, namespace: 'default', dbFile: path.join(folder, 'temporal.db'), logFile: path.join(folder, 'server.log') });
});

afterAll(async () => {
  await server?.stop();
});

describe('the library API', () => {
  it('exports what embedding Tollgate needs from one entry point', () => {
    for (const name of ['defineTool', 'ToolOutcome', 'createWorker', 'TollgateClient', 'builtInTools', 'loadConfig', 'startDevServer'] as const) {
      expect(tollgate[name], name).toBeDefined();
    }
  });

  it('runs the README\'s "add your own tool" example, which is the file examples/add-your-own-tool.ts', async () => {
    const readme = readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
    const example = readFileSync(path.join(PROJECT_ROOT, 'examples', 'add-your-own-tool.ts'), 'utf8');
    expect(readme).toContain(`\`\`\`ts\n${example}\`\`\``);
    const result = await main(testConfig({ temporal: { address: server.address } }));
    expect(result).toMatchObject({ status: 'completed', answer: 'Counted.' });
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'days_until', effect: 'read', status: 'success', attempts: 1 })]);
  });
});
