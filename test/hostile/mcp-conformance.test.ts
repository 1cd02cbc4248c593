import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../intents/sqlite-store';
import { createRunTool } from '../../activities/boundary/run-tool';
import { WRITE_INTERRUPTED } from '../../common/activity-types';
import type { McpConfigInput } from '../../tools/mcp/mcp-config';
import { createToolRegistry } from '../../tools/tool-registry';
import { compileOutsideSchema } from '../../tools/json-schema/outside-schema';
import { mcpToolSource, type McpToolSource } from '../../tools/mcp/mcp-tool-source';
import { openToolSources } from '../../tools/tool-source';
import type { ToolDefinition } from '../../tools/define-tool';
import { approvalSignal } from '../../workflows/messages';
import { eventLoopProbe } from '../helpers/event-loop-probe';
import { eventLoopWorkProbe, expectLive } from '../helpers/event-loop-work-probe';
import { nestedArrays } from '../helpers/schema-probes';
import { runToolOnce } from '../helpers/run-tool-once';
import { testConfig } from '../helpers/test-config';
import { scripted, useTurnRunner, waitForState } from '../helpers/turn-runner';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'hostile-mcp-server.ts');
/** The longest the event loop may stall in any case here: generous, about liveness (a backtracking match stalls it for seconds). */
const MAX_STALL_MS = 500;
/** How much the worker's memory may grow while a server sends 300 MB: generous, and far below reading it whole. */
const MAX_GROWTH_BYTES = 150 * 1024 * 1024;

const runTurn = useTurnRunner();
const sources: McpToolSource[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  await Promise.all(sources.splice(0).map((source) => source.close()));
});
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** One hostile server's record of executions: the tools it ran, one line each, as the server itself wrote them. */
function recordFile(): string {
  return path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-')), 'executions');
}

/** How often the server ran `tool`, from its own record. */
function executions(record: string, tool: string): number {
  if (!existsSync(record)) return 0;
  return readFileSync(record, 'utf8')
    .split('\n')
    .filter((line) => line === tool).length;
}

/** The config of the hostile server over stdio (a fresh process per connection). */
function stdioServer(record: string, list = 'normal', schemas = '') {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', FIXTURE],
    env: { HOSTILE_TRANSPORT: 'stdio', HOSTILE_RECORD: record, HOSTILE_LIST: list, HOSTILE_SCHEMAS: schemas },
  };
}

/** Starts the hostile server over Streamable HTTP in its own process; its url once it listens. */
async function httpServer(record: string): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: { ...process.env, HOSTILE_TRANSPORT: 'http', HOSTILE_RECORD: record },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const found = /listening (\S+)/.exec(output);
      if (found) resolve(found[1]);
    });
    child.on('exit', (code) => reject(new Error(`the hostile server exited with ${code}`)));
  });
}

/** Opens these servers as a worker does, through the tool source seam. */
function openServers(servers: McpConfigInput['servers'], log: (line: string) => void) {
  return openToolSources([mcpToolSource({ servers })], { config: testConfig(), log });
}

/** The tools of these servers, with the log lines the source wrote. */
async function hostileTools(servers: McpConfigInput['servers']) {
  const lines: string[] = [];
  const source = await openServers(servers, (line) => lines.push(line));
  sources.push(source);
  const byName = (name: string) => source.tools.find((tool) => tool.name === name)!;
  return { tools: source.tools, byName, lines };
}

/** The real boundary (registry, SQLite intent store, runTool) over these tools. */
function boundary(tools: ToolDefinition[]) {
  const registry = createToolRegistry({ tools });
  const store = openSqliteStore(':memory:');
  const runTool = createRunTool({ registry, store });
  const call = (tool: string, args: unknown, taskId = `task-${randomUUID()}`) =>
    runToolOnce(runTool, {
      taskId,
      callId: `call-${randomUUID()}`,
      tool,
      args,
      definitionDigest: registry.get(tool)?.source?.definitionDigest,
    });
  return { store, call };
}

// A full garbage collection before each reading, so that what is compared is what stays held (a body read whole
// stays; chunks already read and dropped do not), not how far the collector happened to get.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** The worker's memory that a body read whole would grow: the JavaScript heap and the buffers outside it, after a full collection. */
function memoryBytes(): number {
  collectGarbage();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external + usage.arrayBuffers;
}

/** Approves every call that waits for a person, as it comes, until the turn ends. */
async function approveFirst(handle: WorkflowHandle): Promise<void> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
  const [pending] = state.pendingApprovals;
  await handle.signal(approvalSignal, { callId: pending.callId, decision: 'approve', argsDigest: pending.argsDigest });
}

const done = { text: 'done' };
const probeCall = { toolCalls: [{ tool: 'hostile__probe', args: {} }] };

describe('an MCP server whose input schema backtracks', () => {
  const hostileSlug = { slug: `${'a'.repeat(29)}!` };

  it('checks the slug on a linear-time engine: refused, the event loop live, nothing sent', async () => {
    const record = recordFile();
    const { byName } = await hostileTools({ hostile: stdioServer(record) });
    const probe = eventLoopProbe();
    const refused = byName('hostile__check_slug').input.safeParse(hostileSlug);
    const accepted = byName('hostile__check_slug').input.safeParse({ slug: 'a-b-'.repeat(5_000) + 'c' });
    const tooLong = byName('hostile__check_slug').input.safeParse({ slug: 'a'.repeat(1_000_000) });
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(probe.stop(), 'the event loop was blocked this long at most').toBeLessThan(MAX_STALL_MS);
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]).toMatchObject({ path: ['slug'], message: 'must match pattern "^([a-z0-9]+-?)+$"' });
    expect(accepted.success).toBe(true);
    expect(tooLong.error?.issues[0].message).toMatch(
      /^is 1000000 characters, too long to be checked against the pattern "\^\(\[a-z0-9\]\+-\?\)\+\$"/,
    );
    expect(executions(record, 'check_slug')).toBe(0);
  });

  it('answers a real turn: invalid_arguments with 0 executions, and the next call of the turn is served', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({ hostile: { ...stdioServer(record), trustAnnotations: true } });
    const slugCall = { toolCalls: [{ tool: 'hostile__check_slug', args: hostileSlug }] };
    const probe = eventLoopProbe();
    const { result, runToolScheduled } = await runTurn({ tools, input: { prompt: 'x', model: scripted([slugCall, probeCall, done]) } });
    expect(probe.stop(), 'the event loop was blocked this long at most').toBeLessThan(MAX_STALL_MS);
    expect(result.status).toBe('completed');
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.code, event.executions])).toEqual([
      ['hostile__check_slug', 'error', 'invalid_arguments', 0],
      ['hostile__probe', 'success', undefined, 1],
    ]);
    expect(runToolScheduled).toBe(1);
    expect(executions(record, 'check_slug')).toBe(0);
    expect(executions(record, 'probe')).toBe(1);
  });
});

describe('an MCP write whose answer is lost after the server ran it', () => {
  for (const answer of ['mismatch', 'missing'] as const) {
    it(`(${answer === 'mismatch' ? 'structured content breaking the output schema' : 'no structured content'}): outcome_unknown, the intent kept, never run again for it`, async () => {
      const record = recordFile();
      const { tools } = await hostileTools({ hostile: { ...stdioServer(record), trustAnnotations: true } });
      const config = testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' }, outcomes: { onUnknown: 'report' } });
      const store = openSqliteStore(':memory:');
      const taskId = `ticket-${randomUUID()}`;
      const ticket = { toolCalls: [{ tool: 'hostile__create_ticket', args: { title: 'printer on fire', answer } }] };
      const turn = () =>
        runTurn({
          tools,
          store,
          config,
          input: { taskId, prompt: 'x', model: scripted([ticket, probeCall, done]) },
          interact: approveFirst,
        });

      const first = await turn();
      expect(first.result.toolCalls.map((event) => [event.tool, event.status, event.code, event.executions])).toEqual([
        ['hostile__create_ticket', 'error', 'outcome_unknown', 1],
        ['hostile__probe', 'success', undefined, 1],
      ]);
      expect(executions(record, 'create_ticket')).toBe(1);
      const intents = await store.listTask(taskId);
      expect(intents.map((intent) => [intent.tool, intent.state])).toEqual([['hostile__create_ticket', 'started']]);

      // The same intent again, approved again: the boundary does not run it a second time.
      const second = await turn();
      expect(second.result.toolCalls[0]).toMatchObject({ tool: 'hostile__create_ticket', status: 'error', code: 'outcome_unknown' });
      expect(executions(record, 'create_ticket')).toBe(1);
      expect(executions(record, 'probe')).toBe(2);
      await store.close();
    });
  }

  it('takes the server answering with a JSON-RPC error as its refusal: tool_failure, the intent released, nothing run', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({ hostile: { ...stdioServer(record), trustAnnotations: true } });
    const { store, call } = boundary(tools);
    const taskId = `ticket-${randomUUID()}`;
    const outcome = await call('hostile__create_ticket', { title: 'x', answer: 'refuse' }, taskId);
    expect(outcome).toMatchObject({ status: 'error', code: 'tool_failure', executions: 1 });
    expect(outcome.status === 'error' && outcome.message).toMatch(/tickets are closed today/);
    expect(await store.listTask(taskId)).toEqual([]);
    expect(executions(record, 'create_ticket')).toBe(0);
  });

  it('retries a read whose answer breaks its output schema within its bound: transient_failure after maxAttempts executions', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({
      hostile: { ...stdioServer(record), trustAnnotations: true, tools: { read_report: { maxAttempts: 2 } } },
    });
    const report = { toolCalls: [{ tool: 'hostile__read_report', args: {} }] };
    const { result } = await runTurn({ tools, input: { prompt: 'x', model: scripted([report, done]) } });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'transient_failure', executions: 2 })]);
    expect(executions(record, 'read_report')).toBe(2);
  });
});

describe('an MCP server that lists tools without end', () => {
  it('stops the start of a required server at the page cap, naming the server and the cap, with memory bounded', async () => {
    const record = recordFile();
    const before = memoryBytes();
    const probe = eventLoopProbe();
    const started = openServers({ endless: stdioServer(record, 'endless') }, () => undefined);
    await expect(started).rejects.toThrow(
      'mcp server "endless" could not start: it lists its tools in more than 100 pages (mcp.servers.endless.maxListPages)',
    );
    expect(probe.stop(), 'the event loop was blocked this long at most').toBeLessThan(MAX_STALL_MS);
    expect(memoryBytes() - before).toBeLessThan(MAX_GROWTH_BYTES);
  });

  it('stops at the tool cap too, naming it', async () => {
    const servers = { endless: { ...stdioServer(recordFile(), 'endless'), maxTools: 50 } };
    await expect(openServers(servers, () => undefined)).rejects.toThrow(
      'mcp server "endless" could not start: it lists more than 50 tools (mcp.servers.endless.maxTools)',
    );
  });

  it('leaves an optional one out with a log line, and serves the other servers', async () => {
    const record = recordFile();
    const { tools, lines } = await hostileTools({
      endless: { ...stdioServer(recordFile(), 'endless'), optional: true },
      hostile: stdioServer(record),
    });
    expect(lines).toContain(
      'mcp server "endless" could not start: it lists its tools in more than 100 pages (mcp.servers.endless.maxListPages); it is optional, so its tools are left out',
    );
    expect(tools.every((tool) => tool.name.startsWith('hostile__'))).toBe(true);
    expect(tools.length).toBe(9);
  });

  it('refuses a write whose listing before it runs goes on without end: transient_failure, 0 executions, the intent released', async () => {
    const record = recordFile();
    const { byName } = await hostileTools({ hostile: { ...stdioServer(record, 'endless-after-first'), trustAnnotations: true } });
    const { store, call } = boundary([byName('hostile__create_ticket')]);
    const taskId = `ticket-${randomUUID()}`;
    const outcome = await call('hostile__create_ticket', { title: 'x', answer: 'ok' }, taskId);
    expect(outcome).toMatchObject({ status: 'error', code: 'transient_failure' });
    expect(outcome.status === 'error' && outcome.message).toMatch(
      /was not run: .*more than 100 pages \(mcp\.servers\.hostile\.maxListPages\)/,
    );
    expect(executions(record, 'create_ticket')).toBe(0);
    expect(await store.listTask(taskId)).toEqual([]);
  });
});

describe('an MCP server that answers with 300 MB', () => {
  it('over Streamable HTTP: the body is cut at maxResponseBytes, the read fails transiently, memory bounded, the next call served', async () => {
    const record = recordFile();
    const url = await httpServer(record);
    const { tools } = await hostileTools({ hostile: { url, trustAnnotations: true } });
    const { call } = boundary(tools);
    const before = memoryBytes();
    const probe = eventLoopProbe();
    await expect(call('hostile__flood', {})).rejects.toMatchObject({
      type: 'transient_failure',
      message: expect.stringMatching(/passed 4194304 bytes/),
    });
    expect(probe.stop(), 'the event loop was blocked this long at most').toBeLessThan(MAX_STALL_MS);
    expect(memoryBytes() - before).toBeLessThan(MAX_GROWTH_BYTES);
    expect(executions(record, 'flood')).toBe(1);
    expect(await call('hostile__probe', {})).toMatchObject({ status: 'success', data: 'alive' });
  });

  it('over Streamable HTTP in one event of an event stream: cut at the cap, and the call fails then, not at its timeout', async () => {
    const record = recordFile();
    const url = await httpServer(record);
    // A ten-minute timeout: the test would time out long before it if the cut left the request waiting.
    const { tools } = await hostileTools({ hostile: { url, trustAnnotations: true, tools: { flood_sse: { timeout: '10m' } } } });
    const { call } = boundary(tools);
    const before = memoryBytes();
    await expect(call('hostile__flood_sse', {})).rejects.toMatchObject({
      type: 'transient_failure',
      message: expect.stringMatching(/answer was lost: the answer of http:\/\/127\.0\.0\.1:\d+\/mcp passed 4194304 bytes/),
    });
    expect(memoryBytes() - before).toBeLessThan(MAX_GROWTH_BYTES);
    expect(executions(record, 'flood_sse')).toBe(1);
    expect(await call('hostile__probe', {})).toMatchObject({ status: 'success', data: 'alive' });
  });

  it('over Streamable HTTP, for a write: outcome_unknown (write_interrupted), 1 execution, the intent kept', async () => {
    const record = recordFile();
    const url = await httpServer(record);
    const { tools } = await hostileTools({ hostile: { url, trustAnnotations: true } });
    const { store, call } = boundary(tools);
    const taskId = `flood-${randomUUID()}`;
    const before = memoryBytes();
    await expect(call('hostile__flood_write', {}, taskId)).rejects.toMatchObject({ type: WRITE_INTERRUPTED });
    expect(memoryBytes() - before).toBeLessThan(MAX_GROWTH_BYTES);
    expect(executions(record, 'flood_write')).toBe(1);
    expect((await store.listTask(taskId)).map((intent) => intent.state)).toEqual(['started']);
  });

  it('over stdio as one endless line: cut at maxResponseBytes, the read fails transiently, memory bounded, a new process serves the next call', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({ hostile: { ...stdioServer(record), trustAnnotations: true, maxResponseBytes: 1024 * 1024 } });
    const { call } = boundary(tools);
    const before = memoryBytes();
    const probe = eventLoopProbe();
    await expect(call('hostile__flood', {})).rejects.toMatchObject({
      type: 'transient_failure',
      message: expect.stringMatching(/answer was lost: ReadBuffer exceeded maximum size of 1048576 bytes/),
    });
    expect(probe.stop(), 'the event loop was blocked this long at most').toBeLessThan(MAX_STALL_MS);
    expect(memoryBytes() - before).toBeLessThan(MAX_GROWTH_BYTES);
    expect(executions(record, 'flood')).toBe(1);
    expect(await call('hostile__probe', {})).toMatchObject({ status: 'success', data: 'alive' });
  });
});

describe('an MCP stdio server that dies or goes silent mid-call', () => {
  it('crashing after it ran a write: outcome_unknown (write_interrupted), 1 execution, the intent kept, the next call served', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({ hostile: { ...stdioServer(record), trustAnnotations: true } });
    const { store, call } = boundary(tools);
    const taskId = `crash-${randomUUID()}`;
    await expect(call('hostile__crash', {}, taskId)).rejects.toMatchObject({ type: WRITE_INTERRUPTED });
    expect(executions(record, 'crash')).toBe(1);
    expect((await store.listTask(taskId)).map((intent) => intent.state)).toEqual(['started']);
    expect(await call('hostile__probe', {})).toMatchObject({ status: 'success', data: 'alive' });
  });

  it('writing one endless stderr line: the log gets its first 2,000 characters and the lines after it', async () => {
    const server = stdioServer(recordFile());
    const before = memoryBytes();
    const { lines, byName } = await hostileTools({ hostile: { ...server, env: { ...server.env, HOSTILE_STDERR: 'endless-line' } } });
    const deadline = Date.now() + 30_000;
    while (!lines.includes('[mcp hostile] after the flood') && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines).toContain('[mcp hostile] after the flood');
    expect(lines).toContain(`[mcp hostile] ${'x'.repeat(2_000)}…`);
    expect(memoryBytes() - before).toBeLessThan(MAX_GROWTH_BYTES);
    expect(
      await Promise.resolve(
        byName('hostile__probe').handler({}, { taskId: 't', callId: 'c', attempt: 1, signal: new AbortController().signal }),
      ),
    ).toMatchObject({ ok: true, data: 'alive' });
  });

  it('never answering a read: cut off at its timeout as transient_failure, the next call served', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({
      hostile: { ...stdioServer(record), trustAnnotations: true, tools: { hang: { timeout: '1s' } } },
    });
    const { call } = boundary(tools);
    await expect(call('hostile__hang', {})).rejects.toMatchObject({ type: 'transient_failure' });
    expect(executions(record, 'hang')).toBe(1);
    expect(await call('hostile__probe', {})).toMatchObject({ status: 'success', data: 'alive' });
  });
});

describe('an MCP server whose schemas make a validator work without end (the DAG probe)', () => {
  // The validator's first compile in a process loads it and its meta-schema (about 125 ms, whatever the schema): paid
  // once per worker at start, it is not what these cases measure.
  beforeAll(() => void compileOutsideSchema({ type: 'object' }));

  for (const depth of [20, 30, 40]) {
    it(`refuses an input schema of ${depth} levels at start, naming the server, the tool and the bound, the event loop live`, async () => {
      const probe = eventLoopWorkProbe();
      const started = openServers({ dag: stdioServer(recordFile(), 'normal', `dag-input:${depth}`) }, () => undefined);
      await expect(started).rejects.toThrow(
        'mcp server "dag" could not start: tool "dag": the input schema is over its work budget: applying it once follows its references to more than 100000 nodes (maxExpandedWork)',
      );
      expectLive(probe.stop());
    });
  }

  it('leaves out an optional server whose output schema is the probe (30 levels), and a turn on the same worker is served by the others', async () => {
    const record = recordFile();
    const probe = eventLoopWorkProbe();
    const { tools, lines } = await hostileTools({
      dag: { ...stdioServer(recordFile(), 'normal', 'dag-output:30'), optional: true },
      hostile: { ...stdioServer(record), trustAnnotations: true },
    });
    expectLive(probe.stop());
    expect(lines).toContain(
      'mcp server "dag" could not start: tool "dag": the output schema: the schema is over its work budget: applying it once follows its references to more than 100000 nodes (maxExpandedWork); it is optional, so its tools are left out',
    );
    const { result } = await runTurn({ tools, input: { prompt: 'x', model: scripted([probeCall, done]) } });
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.executions])).toEqual([['hostile__probe', 'success', 1]]);
    expect(executions(record, 'probe')).toBe(1);
  });

  it('checks a tree against the probe folded into one recursive level at every depth up to 40 within the work budget: refused past it, never stalled', async () => {
    const record = recordFile();
    const { byName } = await hostileTools({ hostile: stdioServer(record, 'normal', 'nested') });
    const input = byName('hostile__nest').input;
    const verdicts: Array<[number, boolean]> = [];
    const probe = eventLoopWorkProbe();
    for (let depth = 1; depth <= 40; depth++) {
      verdicts.push([depth, input.safeParse({ tree: nestedArrays(depth) }).success]);
      // A turn between two checks: the event loop serves timers between them.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, 60));
    expectLive(probe.stop());
    // Shallow trees fit (the check is real); deep ones cost more than the budget and are refused, saying so.
    expect(verdicts.slice(0, 10).every(([, fits]) => fits)).toBe(true);
    expect(verdicts.slice(30).every(([, fits]) => !fits)).toBe(true);
    const refused = input.safeParse({ tree: nestedArrays(40) });
    expect(refused.error?.issues[0].message).toBe(
      'could not be checked against the schema: checking it would visit more than 250000 schema nodes (maxCheckWork)',
    );
    expect(input.safeParse({ tree: [[['x']]] }).success).toBe(false);
    expect(executions(record, 'nest')).toBe(0);
  });

  it('answers a real turn calling it with a tree 40 deep: invalid_arguments with 0 executions, and the next call of the turn is served', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({ hostile: { ...stdioServer(record, 'normal', 'nested'), trustAnnotations: true } });
    const nestCall = { toolCalls: [{ tool: 'hostile__nest', args: { tree: nestedArrays(40) } }] };
    const probe = eventLoopWorkProbe();
    const { result, runToolScheduled } = await runTurn({ tools, input: { prompt: 'x', model: scripted([nestCall, probeCall, done]) } });
    // A whole turn on a fresh worker stalls its event loop about 120 ms without any schema (the workflow sandbox is made);
    // the check's own stall is measured above, here the turn's liveness.
    expectLive(probe.stop(), MAX_STALL_MS);
    expect(result.status).toBe('completed');
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.code, event.executions])).toEqual([
      ['hostile__nest', 'error', 'invalid_arguments', 0],
      ['hostile__probe', 'success', undefined, 1],
    ]);
    expect(runToolScheduled).toBe(1);
    expect(executions(record, 'nest')).toBe(0);
    expect(executions(record, 'probe')).toBe(1);
  });
});

describe('an MCP server that answers 5,000 levels deep', () => {
  it('through the real boundary: a stable outcome (redacted, cut to the output bound), not a stack overflow; the next call served', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({ hostile: { ...stdioServer(record, 'normal', 'deep'), trustAnnotations: true } });
    const { call } = boundary(tools);
    const probe = eventLoopWorkProbe();
    const outcome = await call('hostile__deep_answer', {});
    expectLive(probe.stop());
    expect(outcome).toMatchObject({ status: 'success', executions: 1, truncated: true });
    const shown = outcome.status === 'success' ? JSON.stringify(outcome.data) : '';
    expect(shown).toMatch(/^"\{\\"structuredContent\\":\{\\"answer\\":\{\\"next\\":\{/);
    expect(outcome.originalSize).toBeGreaterThan(5_000 * 9);
    expect(executions(record, 'deep_answer')).toBe(1);
    expect(await call('hostile__probe', {})).toMatchObject({ status: 'success', data: 'alive' });
  });

  it('in a real turn: the deep answer reaches the model as a result and the secret at its bottom never does', async () => {
    const record = recordFile();
    const { tools } = await hostileTools({
      hostile: { ...stdioServer(record, 'normal', 'deep'), trustAnnotations: true, tools: { deep_answer: { maxOutputChars: 200_000 } } },
    });
    const deepCall = { toolCalls: [{ tool: 'hostile__deep_answer', args: {} }] };
    const { result, modelInputs } = await runTurn({ tools, input: { prompt: 'x', model: scripted([deepCall, probeCall, done]) } });
    expect(result.status).toBe('completed');
    const seen = JSON.stringify(modelInputs);
    expect(seen).toContain('[redacted]');
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.executions, event.truncated])).toEqual([
      ['hostile__deep_answer', 'success', 1, false],
      ['hostile__probe', 'success', 1, false],
    ]);
    expect(seen).not.toContain('sk-hostile0123456789abcdef');
    expect(executions(record, 'deep_answer')).toBe(1);
  });
});
