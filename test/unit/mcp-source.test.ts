import { mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { mcpSchema, type McpServerConfig } from '../../tools/mcp/mcp-config';
import type { ToolDefinition } from '../../tools/define-tool';
import { ToolError } from '../../tools/tool-error';
import { ToolOutcome } from '../../tools/tool-outcome';
import { reconnectDelay } from '../../tools/mcp/mcp-connection';
import { jsonSchemaInput } from '../../tools/json-schema/json-schema-input';
import { mcpResultOutcome } from '../../tools/mcp/mcp-result';
import { MAX_TOOL_NAME_CHARS, sourceToolName } from '../../tools/source-tool-name';
import { mcpToolEffect, startMcpTools, type McpToolSource } from '../../tools/mcp/mcp-tool-source';

const FILESYSTEM_SERVER = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const sources: McpToolSource[] = [];

afterEach(async () => {
  await Promise.all(sources.splice(0).map((source) => source.close()));
});

/** One validated server entry. */
function server(config: Record<string, unknown>): McpServerConfig {
  return mcpSchema.parse({ servers: { s: { command: 'node', ...config } } }).servers.s;
}

/** A validated mcp section. */
const mcpOf = (servers: Record<string, unknown>) => mcpSchema.parse({ servers });
const quiet = () => undefined;

/** The live child processes of this process whose command line contains `marker`. */
function childProcesses(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== process.pid || fields[0] === 'Z') continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) found.push(Number(entry));
    } catch {
      // The process ended while it was read.
    }
  }
  return found;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Calls a tool's handler as the boundary does, with a live signal. */
function call(tool: ToolDefinition, args: unknown): Promise<unknown> {
  return Promise.resolve(tool.handler(args, { taskId: 't', callId: 'c', attempt: 1, signal: new AbortController().signal }));
}

async function filesystem(config: Record<string, unknown> = {}) {
  const folder = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'tollgate-mcp-source-')));
  writeFileSync(path.join(folder, 'a.txt'), 'alpha');
  const lines: string[] = [];
  const source = await startMcpTools({
    mcp: mcpOf({ files: { command: process.execPath, args: [FILESYSTEM_SERVER, folder], trustAnnotations: true, ...config } }),
    log: (line) => lines.push(line),
  });
  sources.push(source);
  const tool = (name: string) => source.tools.find((candidate) => candidate.name === name)!;
  return { folder, lines, source, tool };
}

describe('sourceToolName', () => {
  it('keeps <server>__<tool> when providers accept it as it is', () => {
    expect(sourceToolName('files', 'read_text_file')).toBe('files__read_text_file');
  });

  it('cuts a long name to the limit with a hash of the full name, so names sharing a long prefix stay apart', () => {
    const long = 'x'.repeat(70);
    const first = sourceToolName('files', `${long}_one`);
    const second = sourceToolName('files', `${long}_two`);
    expect(first).toHaveLength(MAX_TOOL_NAME_CHARS);
    expect(second).toHaveLength(MAX_TOOL_NAME_CHARS);
    expect(first).not.toBe(second);
    expect(first).toMatch(/^files__x+_[0-9a-f]{8}$/);
  });

  it('replaces characters providers refuse and adds the hash, so "a.b" and "a_b" differ', () => {
    expect(sourceToolName('s', 'a.b')).toMatch(/^s__a_b_[0-9a-f]{8}$/);
    expect(sourceToolName('s', 'a.b')).not.toBe(sourceToolName('s', 'a_b'));
  });
});

describe('mcpToolEffect', () => {
  const tool = (annotations: Tool['annotations']): Tool => ({ name: 't', inputSchema: { type: 'object' }, annotations });

  it('makes every tool of an untrusted server an irreversible write, whatever its annotations say', () => {
    expect(mcpToolEffect(tool({ readOnlyHint: true }), server({}))).toBe('irreversible_write');
  });

  it('takes readOnlyHint from a trusted server; anything else is an irreversible write, idempotent or not', () => {
    expect(mcpToolEffect(tool({ readOnlyHint: true }), server({ trustAnnotations: true }))).toBe('read');
    const idempotent = tool({ readOnlyHint: false, idempotentHint: true, destructiveHint: false });
    expect(mcpToolEffect(idempotent, server({ trustAnnotations: true }))).toBe('irreversible_write');
    expect(mcpToolEffect(tool(undefined), server({ trustAnnotations: true }))).toBe('irreversible_write');
  });

  it('lets the config override win over annotations either way', () => {
    const overridden = server({ trustAnnotations: true, tools: { t: { effect: 'irreversible_write' } } });
    expect(mcpToolEffect(tool({ readOnlyHint: true }), overridden)).toBe('irreversible_write');
    expect(mcpToolEffect(tool({ destructiveHint: true }), server({ tools: { t: { effect: 'read' } } }))).toBe('read');
  });
});

describe('mcpResultOutcome', () => {
  it('fails on isError alone, and never on what a text says', () => {
    const failed = mcpResultOutcome({ isError: true, content: [{ type: 'text', text: 'done' }] });
    expect(failed).toMatchObject({ ok: false, code: 'tool_failure', message: 'done' });
    const fine = mcpResultOutcome({ content: [{ type: 'text', text: 'Error: nothing wrong here' }] });
    expect(fine).toMatchObject({ ok: true, data: 'Error: nothing wrong here' });
  });

  it('summarizes images and binary resources by type and size, and cuts long resource text', () => {
    const outcome = mcpResultOutcome({
      content: [
        { type: 'text', text: 'a chart' },
        { type: 'image', mimeType: 'image/png', data: Buffer.alloc(3000).toString('base64') },
        { type: 'resource', resource: { uri: 'file:///big.txt', mimeType: 'text/plain', text: 'y'.repeat(5000) } },
        { type: 'resource', resource: { uri: 'file:///blob.bin', blob: Buffer.alloc(10).toString('base64') } },
      ],
    });
    expect(ToolOutcome.is(outcome) && outcome.ok).toBe(true);
    const data = (outcome as { data: { text: string; attachments: Array<Record<string, unknown>> } }).data;
    expect(data.text).toBe('a chart');
    expect(data.attachments[0]).toEqual({ type: 'image', mimeType: 'image/png', bytes: 3000 });
    expect(data.attachments[1]).toMatchObject({ type: 'resource', uri: 'file:///big.txt', chars: 5000 });
    expect(String(data.attachments[1].text)).toHaveLength(2000);
    expect(data.attachments[2]).toMatchObject({ type: 'resource', uri: 'file:///blob.bin', bytes: 10 });
  });

  it('passes structured content on, without a text that only repeats it', () => {
    const repeated = mcpResultOutcome({ content: [{ type: 'text', text: '{"b":2,"a":1}' }], structuredContent: { a: 1, b: 2 } });
    expect(repeated).toEqual(ToolOutcome.ok({ structuredContent: { a: 1, b: 2 } }));
    const both = mcpResultOutcome({ content: [{ type: 'text', text: 'two rows' }], structuredContent: { rows: 2 } });
    expect(both).toMatchObject({ data: { text: 'two rows', structuredContent: { rows: 2 } } });
  });
});

describe('jsonSchemaInput', () => {
  it('checks the 2020-12 dialect and formats, naming the field', () => {
    const input = jsonSchemaInput({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { site: { type: 'string', format: 'uri' } },
      required: ['site'],
    });
    expect(input.safeParse({ site: 'https://example.com' }).success).toBe(true);
    expect(input.safeParse({ site: 'not a uri' }).error?.issues).toEqual([
      expect.objectContaining({ path: ['site'], message: expect.stringContaining('must match format "uri"') }),
    ]);
    expect(input.safeParse({}).error?.issues).toEqual([expect.objectContaining({ path: ['site'] })]);
  });

  it('refuses a schema that does not compile, saying so', () => {
    const broken = { type: 'object', properties: { n: { type: 'integer', minimum: 'one' } } };
    expect(() => jsonSchemaInput(broken)).toThrow(/the input schema does not compile/);
  });
});

describe('startMcpTools with the real filesystem server', () => {
  it('serves only what include, exclude and enabled leave, and names a tool the server does not have', async () => {
    const { source } = await filesystem({
      include: ['read_text_file', 'list_directory', 'write_file'],
      exclude: ['write_file'],
      tools: { list_directory: { enabled: false } },
    });
    expect(source.tools.map((tool) => tool.name)).toEqual(['files__read_text_file']);
    await expect(filesystem({ tools: { delete_everything: { effect: 'read' } } })).rejects.toThrow(
      /^config mcp\.servers\.files\.tools\.delete_everything: the server has no tool named "delete_everything"/,
    );
  });

  it('applies the tool overrides to the policy', async () => {
    const { tool } = await filesystem({
      tools: {
        read_text_file: { timeout: '2s', maxAttempts: 5, maxOutputChars: 100, summaryFields: ['path'] },
        write_file: { approvalTimeout: '10m' },
      },
    });
    expect(tool('files__read_text_file')).toMatchObject({ effect: 'read', timeoutMs: 2000, maxAttempts: 5, maxOutputChars: 100 });
    expect(tool('files__read_text_file').summaryFields).toEqual(['path']);
    expect(tool('files__write_file')).toMatchObject({ effect: 'irreversible_write', approvalTimeoutMs: 600_000 });
  });

  it('writes the server stderr to the log under its name', async () => {
    const { lines } = await filesystem();
    await until(() => lines.some((line) => line.includes('running on stdio')), 'the server said it runs');
    expect(lines.find((line) => line.includes('running on stdio'))).toMatch(/^\[mcp files\] /);
  });

  it('connects again after the server process died, and the next read is served by a new process', async () => {
    const { folder, lines, tool } = await filesystem();
    const [pid] = childProcesses(folder);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    await until(() => lines.some((line) => line.includes('connection closed by the server')), 'the client saw the server go');
    const outcome = await call(tool('files__read_text_file'), { path: path.join(folder, 'a.txt') });
    expect(outcome).toMatchObject({ ok: true, data: { structuredContent: { content: 'alpha' } } });
    expect(childProcesses(folder)).toEqual([expect.any(Number)]);
    expect(childProcesses(folder)[0]).not.toBe(pid);
  });

  it('ends the server process at close, after which a call fails as not sent (transient_failure)', async () => {
    const { folder, source, tool } = await filesystem();
    expect(childProcesses(folder)).toHaveLength(1);
    await source.close();
    await until(() => childProcesses(folder).length === 0, 'the server process ended');
    const failure = call(tool('files__read_text_file'), { path: path.join(folder, 'a.txt') });
    await expect(failure).rejects.toBeInstanceOf(ToolError);
    await expect(failure).rejects.toMatchObject({ code: 'transient_failure', message: expect.stringContaining('is closed') });
  });

  it('leaves an optional server that cannot start out, with a log line naming it', async () => {
    const lines: string[] = [];
    const mcp = mcpOf({ gone: { command: '/nonexistent/mcp-server', optional: true } });
    const source = await startMcpTools({ mcp, log: (line) => lines.push(line) });
    sources.push(source);
    expect(source.tools).toEqual([]);
    expect(lines).toEqual([
      expect.stringMatching(/^mcp server "gone" could not start: .*ENOENT.*; it is optional, so its tools are left out$/),
    ]);
  });

  it('stops on a server that exits at once, naming it', async () => {
    const mcp = mcpOf({ quits: { command: process.execPath, args: ['-e', 'process.exit(3)'] } });
    await expect(startMcpTools({ mcp, log: quiet })).rejects.toThrow(/^mcp server "quits" could not start: /);
  });

  it('names the missing environment variable of an HTTP header', async () => {
    const mcp = mcpOf({ shop: { url: 'http://127.0.0.1:9/mcp', headersFromEnv: { Authorization: 'SHOP_TOKEN' } } });
    await expect(startMcpTools({ mcp, log: quiet, env: {} })).rejects.toThrow(
      'mcp server "shop" could not start: header Authorization needs the environment variable SHOP_TOKEN, which is not set',
    );
  });
});

describe('reconnectDelay', () => {
  it('connects again at once after a lost connection, then waits longer after each failed attempt, up to 5 s', () => {
    expect([0, 1, 2, 3, 10].map(reconnectDelay)).toEqual([0, 200, 400, 800, 5000]);
  });
});
