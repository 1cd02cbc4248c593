import { mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import { mcpSchema, type McpServerConfig } from '../../tools/mcp/mcp-config';
import { argsDigest } from '../../tools/canonical-json';
import { mcpToolSource, startMcpTools, type McpToolSource } from '../../tools/mcp/mcp-tool-source';
import { approvalSignal } from '../../workflows/messages';
import { createWorker } from '../../worker/create-worker';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';
import { roundOf } from '../../testing/round-of';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);
const sources: McpToolSource[] = [];

afterEach(async () => {
  await Promise.all(sources.splice(0).map((source) => source.close()));
});

const FILESYSTEM_SERVER = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const MEMORY_SERVER = require.resolve('@modelcontextprotocol/server-memory/dist/index.js');

/** A fresh folder with one file in it, as the filesystem server's only allowed directory. */
function filesFolder(): string {
  const folder = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'tollgate-mcp-files-')));
  writeFileSync(path.join(folder, 'notes.txt'), 'the meeting moved to Thursday\n');
  return folder;
}

/** The real filesystem server on `folder`, over stdio. */
async function filesystemTools(folder: string, server: Partial<McpServerConfig> = {}) {
  const source = await startMcpTools({
    mcp: mcpSchema.parse({ servers: { files: { command: process.execPath, args: [FILESYSTEM_SERVER, folder], ...server } } }),
    log: () => undefined,
  });
  sources.push(source);
  return source.tools;
}

/** A scripted model that calls `tool` once and then answers. */
function callOnce(tool: string, args: unknown) {
  return scripted([{ toolCalls: [{ tool, args }] }, { text: 'done' }]);
}

/** Approves every call that waits for a person, until `count` were approved. */
function approve(count: number) {
  return async (handle: WorkflowHandle) => {
    for (let approved = 0; approved < count; approved++) {
      const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
      const [pending] = state.pendingApprovals;
      await handle.signal(approvalSignal, {
        callId: pending.callId,
        decision: 'approve',
        argsDigest: pending.argsDigest,
        ...roundOf(pending),
      });
    }
  };
}

describe('MCP tools from @modelcontextprotocol/server-filesystem over stdio', () => {
  it('maps a trusted server annotations: read tools are reads, write_file and edit_file irreversible writes', async () => {
    const tools = await filesystemTools(filesFolder(), { trustAnnotations: true });
    const effects = Object.fromEntries(tools.map((tool) => [tool.name, tool.effect]));
    expect(effects).toMatchObject({
      files__read_text_file: 'read',
      files__list_directory: 'read',
      files__write_file: 'irreversible_write',
      files__edit_file: 'irreversible_write',
    });
  });

  it('makes an untrusted server read-only tool wait for approval, and binds the definition into the approval digest', async () => {
    const folder = filesFolder();
    const tools = await filesystemTools(folder);
    const read = tools.find((tool) => tool.name === 'files__read_text_file')!;
    expect(read.effect).toBe('irreversible_write');
    const args = { path: path.join(folder, 'notes.txt') };
    let digest = '';
    const { result, modelInputs } = await runTurn({
      tools,
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'files__read_text_file', args }] }, { text: 'done' }]) },
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        digest = state.pendingApprovals[0].argsDigest;
        await approve(1)(handle);
      },
    });
    expect(digest).toBe(argsDigest({ args, definitionDigest: read.source?.definitionDigest }));
    expect(digest).not.toBe(argsDigest(args));
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(JSON.stringify(modelInputs[1].messages.find((message) => message.role === 'tool'))).toContain('the meeting moved to Thursday');
  });

  it('runs a trusted server read without approval', async () => {
    const folder = filesFolder();
    const tools = await filesystemTools(folder, { trustAnnotations: true });
    const { result, state, history } = await runTurn({
      tools,
      input: { prompt: 'x', model: callOnce('files__list_directory', { path: folder }) },
    });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'files__list_directory', effect: 'read', status: 'success', executions: 1 }),
    ]);
    expect(state.decisions).toEqual([]);
    const signals = (history.events ?? []).filter((event) => event.workflowExecutionSignaledEventAttributes);
    expect(signals).toEqual([]);
  });

  it('holds write_file until it is approved, then writes the file exactly once', async () => {
    const folder = filesFolder();
    const tools = await filesystemTools(folder, { trustAnnotations: true });
    const target = path.join(folder, 'reply.txt');
    let beforeApproval: string[] = [];
    const { result, runToolScheduled } = await runTurn({
      tools,
      input: { prompt: 'x', model: callOnce('files__write_file', { path: target, content: 'see you Thursday' }) },
      interact: async (handle) => {
        await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        beforeApproval = readdirSync(folder);
        await approve(1)(handle);
      },
    });
    expect(beforeApproval).toEqual(['notes.txt']);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'files__write_file', status: 'success', executions: 1 })]);
    expect(runToolScheduled).toBe(1);
    expect(readFileSync(target, 'utf8')).toBe('see you Thursday');
  });

  it('refuses a path outside the allowed folder as the server own failure (tool_failure), by its isError flag', async () => {
    const tools = await filesystemTools(filesFolder(), { trustAnnotations: true });
    const { result } = await runTurn({
      tools,
      input: { prompt: 'x', model: callOnce('files__read_text_file', { path: '/etc/hostname' }) },
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'tool_failure', executions: 1 })]);
  });
});

/** The live child processes of this process whose command line contains `marker`. */
function childProcesses(marker: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(parent) === process.pid && state !== 'Z' && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('createWorker({ toolSources: [mcpToolSource(…)] }) with the filesystem server', () => {
  it('starts the server with the worker and ends its process when the worker stops', async () => {
    const folder = filesFolder();
    const worker = await createWorker({
      config: testConfig(),
      connection: environment.env.nativeConnection,
      workflowBundle: environment.workflowBundle,
      toolSources: [mcpToolSource({ servers: { files: { command: process.execPath, args: [FILESYSTEM_SERVER, folder] } } })],
      toolSourceLog: () => undefined,
    });
    const whileRunning = await worker.runUntil(async () => childProcesses(folder).length);
    expect(whileRunning).toBe(1);
    const deadline = Date.now() + 10_000;
    while (childProcesses(folder).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(childProcesses(folder)).toEqual([]);
  });
});

describe('MCP tools from @modelcontextprotocol/server-memory over stdio', () => {
  it('creates the entities of an approved create_entities call exactly once in the memory file', async () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-mcp-memory-'));
    const memoryFile = path.join(folder, 'memory.jsonl');
    const source = await startMcpTools({
      mcp: mcpSchema.parse({
        servers: {
          memory: { command: process.execPath, args: [MEMORY_SERVER], env: { MEMORY_FILE_PATH: memoryFile }, trustAnnotations: true },
        },
      }),
      log: () => undefined,
    });
    sources.push(source);
    expect(source.tools.find((tool) => tool.name === 'memory__create_entities')?.effect).toBe('irreversible_write');
    expect(source.tools.find((tool) => tool.name === 'memory__read_graph')?.effect).toBe('read');
    const entities = [
      { name: 'Ada', entityType: 'person', observations: ['prefers email'] },
      { name: 'Tollgate', entityType: 'project', observations: [] },
    ];
    const { result, runToolScheduled } = await runTurn({
      tools: source.tools,
      input: {
        prompt: 'x',
        model: scripted([
          { toolCalls: [{ tool: 'memory__create_entities', args: { entities } }] },
          { toolCalls: [{ tool: 'memory__read_graph', args: {} }] },
          { text: 'done' },
        ]),
      },
      interact: approve(1),
    });
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.executions])).toEqual([
      ['memory__create_entities', 'success', 1],
      ['memory__read_graph', 'success', 1],
    ]);
    expect(runToolScheduled).toBe(2);
    const lines = readFileSync(memoryFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; name: string });
    expect(
      lines
        .filter((line) => line.type === 'entity')
        .map((line) => line.name)
        .sort(),
    ).toEqual(['Ada', 'Tollgate']);
  });
});
