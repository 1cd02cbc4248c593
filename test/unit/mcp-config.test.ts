import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigSection } from '../../config/config-error';
import { ConfigError, parseConfig, PROJECT_ROOT } from '../../config/load-config';
import { mcpSection } from '../../tools/mcp/mcp-config';
import { mcpToolSource } from '../../tools/mcp/mcp-tool-source';
import { testConfig } from '../helpers/test-config';
import { createWorker } from '../../worker/create-worker';

const parse = (mcp: unknown) => parseConfig({ mcp }, { source: 'tollgate.yaml', baseDir: '/srv/agent', env: {} });

describe('the mcp section of the config', () => {
  it('fills the defaults of a stdio server and resolves its cwd against the config folder', () => {
    const config = parse({ servers: { files: { command: 'node', args: ['server.js'], cwd: 'servers' } } });
    expect(config.mcp.servers.files).toMatchObject({
      command: 'node',
      args: ['server.js'],
      cwd: '/srv/agent/servers',
      trustAnnotations: false,
      optional: false,
      exclude: [],
      tools: {},
      connectTimeout: '30s',
      maxResponseBytes: 4 * 1024 * 1024,
      maxListPages: 100,
      maxTools: 1_000,
    });
  });

  it('names a bound on what a server sends that is not a whole number in range', () => {
    expect(() => parse({ servers: { files: { command: 'node', maxResponseBytes: 10 } } })).toThrow(
      /mcp\.servers\.files\.maxResponseBytes: .*1024/,
    );
    expect(() => parse({ servers: { files: { command: 'node', maxListPages: 0 } } })).toThrow(/mcp\.servers\.files\.maxListPages/);
    expect(() => parse({ servers: { files: { command: 'node', maxTools: 2.5 } } })).toThrow(/mcp\.servers\.files\.maxTools/);
  });

  it('takes a Streamable HTTP server with headers from named environment variables', () => {
    const shop = { url: 'https://mcp.example.com/mcp', headersFromEnv: { Authorization: 'SHOP_TOKEN' }, trustAnnotations: true };
    expect(parse({ servers: { shop } }).mcp.servers.shop).toMatchObject(shop);
  });

  it('names an unknown key of a server and of a tool override', () => {
    expect(() => parse({ servers: { files: { command: 'node', trust: true } } })).toThrow(
      'tollgate.yaml: unknown key "mcp.servers.files.trust"',
    );
    expect(() => parse({ servers: { files: { command: 'node', tools: { write_file: { retries: 2 } } } } })).toThrow(
      'unknown key "mcp.servers.files.tools.write_file.retries"',
    );
  });

  it('refuses reversible_write as an MCP tool effect, since an MCP tool has no status check', () => {
    const files = { command: 'node', tools: { write_file: { effect: 'reversible_write' } } };
    expect(() => parse({ servers: { files } })).toThrow(/mcp\.servers\.files\.tools\.write_file\.effect/);
  });

  it('wants exactly one of command and url, and names a key that belongs to the other kind', () => {
    expect(() => parse({ servers: { both: { command: 'node', url: 'http://127.0.0.1:1/mcp' } } })).toThrow(
      /mcp\.servers\.both: give exactly one of command \(stdio\) or url/,
    );
    expect(() => parse({ servers: { none: {} } })).toThrow(/mcp\.servers\.none: give exactly one/);
    expect(() => parse({ servers: { web: { url: 'http://127.0.0.1:1/mcp', args: ['x'] } } })).toThrow(
      /mcp\.servers\.web\.args: args belongs to a stdio server/,
    );
  });

  it('refuses a server name that cannot be part of a tool name', () => {
    expect(() => parse({ servers: { 'my files': { command: 'node' } } })).toThrow(/mcp\.servers\.my files: expected 1-32 letters/);
  });

  it('gives mcpToolSource({ servers }) the same checks, naming the key', async () => {
    expect(() => parseConfigSection(mcpSection, { servers: { files: { command: 'node', bogus: 1 } } }, 'mcpToolSource()')).toThrow(
      ConfigError,
    );
    const mcp = { servers: { files: { command: 'node', bogus: 1 } } } as never;
    await expect(createWorker({ config: testConfig(), toolSources: [mcpToolSource(mcp)] })).rejects.toThrow(
      'mcpToolSource(): unknown key "mcp.servers.files.bogus"',
    );
  });

  it('refuses tool sources next to ready-made activities, which already carry their tools', async () => {
    const activities = {} as never;
    const worker = createWorker({ config: testConfig(), activities, toolSources: [mcpToolSource({ servers: {} })] });
    await expect(worker).rejects.toThrow(/give toolSources or activities, not both/);
  });

  it('stops createWorker with one line naming a server that cannot start, before anything else is opened', async () => {
    const missing = path.join(PROJECT_ROOT, 'no-such-mcp-server');
    const failure = createWorker({ config: testConfig(), toolSources: [mcpToolSource({ servers: { files: { command: missing } } })] });
    await expect(failure).rejects.toThrow(/^mcp server "files" could not start: .*ENOENT/);
    const message = await failure.catch((error: Error) => error.message);
    expect(message).not.toContain('\n');
  });
});
