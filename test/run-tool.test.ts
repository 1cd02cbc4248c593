import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolError } from '../tools/tool-error';
import { defineTool, type ToolContext, type ToolDefinition, type ToolSpec } from '../tools/define-tool';
import { createRunTool } from '../activities/boundary/run-tool';
import { createToolRegistry } from '../tools/tool-registry';
import { ToolOutcome } from '../tools/tool-outcome';
import { openSqliteStore } from '../activities/intents/sqlite-store';
import { runToolOnce, type FlatBoundaryResult } from './helpers/run-tool-once';

const echoInput = z.strictObject({ text: z.string().describe('text') });

function echoTool(handler: (args: z.output<typeof echoInput>, context: ToolContext) => unknown, extra: Partial<Omit<ToolSpec<typeof echoInput>, 'handler'>> = {}): ToolDefinition {
  return defineTool({ name: 'echo', description: 'echo', input: echoInput, effect: 'read', handler, ...extra });
}

function runWith(tool: ToolDefinition, args: unknown = { text: 'hi' }, attempt = 1): Promise<FlatBoundaryResult> {
  const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }) });
  return runToolOnce(runTool, { taskId: 'task', callId: 'call-0-0', tool: tool.name, args }, { attempt });
}

describe('runTool', () => {
  it('treats a plain string as success and reports the attempt', async () => {
    await expect(runWith(echoTool(({ text }) => `said ${text}`), undefined, 2)).resolves.toEqual({
      status: 'success',
      data: 'said hi',
      executions: 2,
      originalSize: 7,
      truncated: false,
    });
  });

  it('does not read "Error:" in a successful output as a failure', async () => {
    await expect(runWith(echoTool(() => 'Error: this is just text'))).resolves.toMatchObject({ status: 'success' });
  });

  it('truncates to maxOutputChars and records the original size', async () => {
    const result = await runWith(echoTool(() => 'x'.repeat(500), { maxOutputChars: 100 }));
    expect(result).toMatchObject({ status: 'success', originalSize: 500, truncated: true });
    expect(String(result.data).startsWith('x'.repeat(100) + '…[truncated: 100 of 500')).toBe(true);
  });

  it('redacts secrets before anything leaves the boundary', async () => {
    const result = await runWith(echoTool(() => ToolOutcome.ok({ note: 'key sk-abcdefghijklmnopqrstuv and Authorization: Bearer abc.def.ghi123' })));
    expect(JSON.stringify(result.data)).not.toMatch(/sk-abc|abc\.def/);
    expect(JSON.stringify(result.data)).toContain('[redacted]');
  });

  it('returns a final error as a result, with the tool message and no stack', async () => {
    const result = await runWith(echoTool(() => { throw new TypeError('cannot read the frobnicator\n    at secret/file.ts:1:1'); }));
    expect(result).toEqual({ status: 'error', code: 'tool_failure', retryable: false, message: 'cannot read the frobnicator', executions: 1, originalSize: 0, truncated: false });
  });

  it('throws a retryable transient_failure for a connection reset, with the attempt in its details', async () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const failure = await runWith(echoTool(() => { throw reset; }), undefined, 2).catch((error) => error);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'transient_failure', nonRetryable: false, details: [{ executions: 2 }] });
  });

  it('times a slow handler out as a transient failure and aborts its signal', async () => {
    let aborted = false;
    const slow = echoTool((_args, { signal }) => new Promise((resolve) => signal.addEventListener('abort', () => { aborted = true; resolve('late'); })), { timeout: 50 });
    await expect(runWith(slow)).rejects.toMatchObject({ type: 'transient_failure', message: 'echo timed out after 50 ms' });
    expect(aborted).toBe(true);
  });

  it('abandons a handler that ignores its signal and never settles, at its timeout, as any timeout', async () => {
    let started = 0;
    const deaf = echoTool(() => { started = Date.now(); return new Promise(() => {}); }, { timeout: 300 });
    const failure = await runWith(deaf).catch((error) => error);
    const elapsed = Date.now() - started;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'transient_failure', nonRetryable: false, message: 'echo timed out after 300 ms' });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(2_000);
  });

  it('maps a permission error to forbidden and a ToolError to its code', async () => {
    const denied = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    await expect(runWith(echoTool(() => { throw denied; }))).resolves.toMatchObject({ status: 'error', code: 'forbidden' });
    await expect(runWith(echoTool(() => { throw new ToolError('nope', 'invalid_arguments'); }))).resolves.toMatchObject({ code: 'invalid_arguments', retryable: false });
  });

  it('never runs the handler for invalid arguments or an unknown tool', async () => {
    let runs = 0;
    const tool = echoTool(() => { runs++; return 'ran'; });
    await expect(runWith(tool, { text: 42 })).resolves.toMatchObject({ status: 'error', code: 'invalid_arguments', executions: 0 });
    const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }) });
    await expect(runToolOnce(runTool, { taskId: 't', callId: 'c', tool: 'nope', args: {} })).resolves.toMatchObject({ code: 'unknown_tool' });
    await expect(runToolOnce(runTool, { taskId: 't', callId: 'c', tool: 'echo', args: { text: 'x' }, allowedTools: [] })).resolves.toMatchObject({ code: 'forbidden' });
    expect(runs).toBe(0);
  });

  it('keeps calls of one tool within its concurrency limit', async () => {
    let running = 0;
    let most = 0;
    const tool = echoTool(async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running--;
      return 'done';
    }, { concurrency: 2 });
    const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }) });
    await Promise.all(Array.from({ length: 6 }, (_, index) => runToolOnce(runTool, { taskId: 't', callId: `c${index}`, tool: 'echo', args: { text: 'x' } })));
    expect(most).toBe(2);
  });
});

describe('runTool under the effect its own registry declares', () => {
  const sendInput = z.strictObject({ to: z.string().describe('to') });

  it('refuses a call the workflow decided under another effect, before any claim or side effect', async () => {
    let runs = 0;
    const send = defineTool({ name: 'send', description: 'send', input: sendInput, effect: 'irreversible_write', handler: () => (runs++, 'sent') });
    const store = openSqliteStore(':memory:');
    const runTool = createRunTool({ registry: createToolRegistry({ tools: [send] }), store });
    const input = { taskId: 'task', callId: 'call-0-0', tool: 'send', args: { to: 'ops' } };
    await expect(runToolOnce(runTool, { ...input, effect: 'read' })).resolves.toEqual({
      status: 'error',
      code: 'forbidden',
      retryable: false,
      message: "send is not run: the model step's worker declared it read, this worker declares irreversible_write",
      executions: 0,
      originalSize: 0,
      truncated: false,
    });
    await expect(runToolOnce(runTool, { ...input, effect: 'reversible_write' })).resolves.toMatchObject({ code: 'forbidden', executions: 0 });
    expect(runs).toBe(0);
    await expect(store.listTask('task')).resolves.toEqual([]);
    await store.close();
  });

  it('runs a call whose effect agrees, and one recorded before the effect was sent, as before', async () => {
    let runs = 0;
    const echo = echoTool(() => (runs++, 'said'));
    const runTool = createRunTool({ registry: createToolRegistry({ tools: [echo] }) });
    await expect(runToolOnce(runTool, { taskId: 't', callId: 'c1', tool: 'echo', args: { text: 'x' }, effect: 'read' })).resolves.toMatchObject({ status: 'success', executions: 1 });
    await expect(runToolOnce(runTool, { taskId: 't', callId: 'c2', tool: 'echo', args: { text: 'x' } })).resolves.toMatchObject({ status: 'success', executions: 1 });
    await expect(runToolOnce(runTool, { taskId: 't', callId: 'c3', tool: 'echo', args: { text: 'x' }, effect: 'irreversible_write' })).resolves.toMatchObject({ code: 'forbidden' });
    expect(runs).toBe(2);
  });
});

describe('createToolRegistry', () => {
  it('refuses a tool declared twice', () => {
    const tool = echoTool(() => 'x');
    expect(() => createToolRegistry({ tools: [tool, tool] })).toThrow('tool "echo" is declared twice');
  });

  it('applies config overrides and refuses overrides for unknown tools', () => {
    const registry = createToolRegistry({ tools: [echoTool(() => 'x')], overrides: { echo: { timeout: '2s', maxAttempts: 5 } } });
    expect(registry.policy('echo')).toMatchObject({ effect: 'read', timeoutMs: 2000, maxAttempts: 5 });
    expect(() => createToolRegistry({ tools: [echoTool(() => 'x')], overrides: { ehco: {} } })).toThrow('config tools.ehco: no tool named "ehco"');
  });
});
