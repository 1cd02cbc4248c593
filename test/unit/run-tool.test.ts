import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolError } from '../../tools/tool-error';
import { defineTool, type ToolContext, type ToolDefinition, type ToolSpec } from '../../tools/define-tool';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createRunTool } from '../../activities/boundary/run-tool';
import { createToolRegistry } from '../../tools/tool-registry';
import { toolOverrideSchema } from '../../tools/tool-config';
import { ToolOutcome } from '../../tools/tool-outcome';
import { openSqliteStore } from '../../intents/sqlite-store';
import { runToolOnce, type FlatBoundaryResult } from '../helpers/run-tool-once';

const echoInput = z.strictObject({ text: z.string().describe('text') });

function echoTool(
  handler: (args: z.output<typeof echoInput>, context: ToolContext) => unknown,
  extra: Partial<Omit<ToolSpec<typeof echoInput>, 'handler'>> = {},
): ToolDefinition {
  // `extra` may change the effect: the spec's union is checked at run time by defineTool, as for any spec built from parts.
  return defineTool({ name: 'echo', description: 'echo', input: echoInput, effect: 'read', handler, ...extra } as ToolSpec<
    typeof echoInput
  >);
}

function runWith(tool: ToolDefinition, args: unknown = { text: 'hi' }, attempt = 1): Promise<FlatBoundaryResult> {
  const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }) });
  return runToolOnce(runTool, { taskId: 'task', callId: 'call-0-0', tool: tool.name, args }, { attempt });
}

describe('runTool', () => {
  it('treats a plain string as success and reports the attempt', async () => {
    await expect(
      runWith(
        echoTool(({ text }) => `said ${text}`),
        undefined,
        2,
      ),
    ).resolves.toEqual({
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
    const result = await runWith(
      echoTool(() => ToolOutcome.ok({ note: 'key sk-abcdefghijklmnopqrstuv and Authorization: Bearer abc.def.ghi123' })),
    );
    expect(JSON.stringify(result.data)).not.toMatch(/sk-abc|abc\.def/);
    expect(JSON.stringify(result.data)).toContain('[redacted]');
  });

  it('returns a final error as a result, with the tool message and no stack', async () => {
    const result = await runWith(
      echoTool(() => {
        throw new TypeError('cannot read the frobnicator\n    at secret/file.ts:1:1');
      }),
    );
    expect(result).toEqual({
      status: 'error',
      code: 'tool_failure',
      retryable: false,
      message: 'cannot read the frobnicator',
      executions: 1,
      originalSize: 0,
      truncated: false,
    });
  });

  it('throws a retryable transient_failure for a connection reset, with the attempt in its details', async () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const failure = await runWith(
      echoTool(() => {
        throw reset;
      }),
      undefined,
      2,
    ).catch((error) => error);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'transient_failure', nonRetryable: false, details: [{ executions: 2 }] });
  });

  it('times a slow handler out as a transient failure and aborts its signal', async () => {
    let aborted = false;
    const slow = echoTool(
      (_args, { signal }) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve('late');
          }),
        ),
      { timeout: 50 },
    );
    await expect(runWith(slow)).rejects.toMatchObject({ type: 'transient_failure', message: 'echo timed out after 50 ms' });
    expect(aborted).toBe(true);
  });

  it('abandons a handler that ignores its signal and never settles, at its timeout, as any timeout', async () => {
    let started = 0;
    const deaf = echoTool(
      () => {
        started = Date.now();
        return new Promise(() => {});
      },
      { timeout: 300 },
    );
    const failure = await runWith(deaf).catch((error) => error);
    const elapsed = Date.now() - started;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'transient_failure', nonRetryable: false, message: 'echo timed out after 300 ms' });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(2_000);
  });

  it('maps a permission error to forbidden and a ToolError to its code', async () => {
    const denied = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    await expect(
      runWith(
        echoTool(() => {
          throw denied;
        }),
      ),
    ).resolves.toMatchObject({ status: 'error', code: 'forbidden' });
    await expect(
      runWith(
        echoTool(() => {
          throw new ToolError('nope', 'invalid_arguments');
        }),
      ),
    ).resolves.toMatchObject({ code: 'invalid_arguments', retryable: false });
  });

  it('never runs the handler for invalid arguments or an unknown tool', async () => {
    let runs = 0;
    const tool = echoTool(() => {
      runs++;
      return 'ran';
    });
    await expect(runWith(tool, { text: 42 })).resolves.toMatchObject({ status: 'error', code: 'invalid_arguments', executions: 0 });
    const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }) });
    await expect(runToolOnce(runTool, { taskId: 't', callId: 'c', tool: 'nope', args: {} })).resolves.toMatchObject({
      code: 'unknown_tool',
    });
    await expect(
      runToolOnce(runTool, { taskId: 't', callId: 'c', tool: 'echo', args: { text: 'x' }, allowedTools: [] }),
    ).resolves.toMatchObject({ code: 'forbidden' });
    expect(runs).toBe(0);
  });

  it('keeps calls of one tool within its concurrency limit', async () => {
    let running = 0;
    let most = 0;
    const tool = echoTool(
      async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
        return 'done';
      },
      { concurrency: 2 },
    );
    const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }) });
    await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        runToolOnce(runTool, { taskId: 't', callId: `c${index}`, tool: 'echo', args: { text: 'x' } }),
      ),
    );
    expect(most).toBe(2);
  });
});

describe('the wait for a place under the concurrency limit', () => {
  const draftInput = z.strictObject({ name: z.string().describe('name') });

  /** A reversible write with concurrency 1 whose `hold` call keeps its place (ignoring its abort) until `letGo` is called. */
  function heldTool() {
    const ran: string[] = [];
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    const tool = defineTool({
      name: 'draft',
      description: 'draft',
      input: draftInput,
      effect: 'reversible_write',
      timeout: 200,
      concurrency: 1,
      status: () => 'not_applied',
      handler: async ({ name }) => {
        ran.push(name);
        if (name === 'hold') await held;
        return `wrote ${name}`;
      },
    });
    const store = openSqliteStore(':memory:');
    return { ran, letGo, store, runTool: createRunTool({ registry: createToolRegistry({ tools: [tool] }), store }) };
  }

  it('times a call out while it waits behind a handler that keeps its place: 0 executions, its handler never runs', async () => {
    const { ran, letGo, store, runTool } = heldTool();
    const first = runToolOnce(runTool, { taskId: 't', callId: 'c1', tool: 'draft', args: { name: 'hold' } }).catch((error) => error);
    const started = Date.now();
    const second = await runToolOnce(runTool, { taskId: 't', callId: 'c2', tool: 'draft', args: { name: 'waits' } });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(second).toEqual({
      status: 'error',
      code: 'transient_failure',
      retryable: true,
      message: 'draft timed out after 200 ms waiting for a place under its concurrency limit of 1; it did not run',
      executions: 0,
      originalSize: 0,
      truncated: false,
      idempotency: 'claimed',
    });
    // The first was cut off by its own timeout while still applying: an interruption, 1 execution.
    await expect(first).resolves.toMatchObject({ type: 'write_interrupted', details: [{ executions: 1 }] });
    letGo();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ran).toEqual(['hold']);
    // The attempt that never started is given up, so it is claimable again rather than in flight; the place is free again.
    const intents = await store.listTask('t');
    expect(intents.map((intent) => [intent.callId, intent.state])).toEqual([['c1', 'started']]);
    await expect(runToolOnce(runTool, { taskId: 't', callId: 'c3', tool: 'draft', args: { name: 'waits' } })).resolves.toMatchObject({
      status: 'success',
      executions: 1,
    });
    expect(ran).toEqual(['hold', 'waits']);
    await store.close();
  });

  it('never runs a call cancelled while it waits, even once the place is free', async () => {
    const { ran, letGo, store, runTool } = heldTool();
    const first = runToolOnce(runTool, { taskId: 't', callId: 'c1', tool: 'draft', args: { name: 'hold' } }).catch((error) => error);
    const waiting = new MockActivityEnvironment();
    const second = waiting.run(runTool, { taskId: 't', callId: 'c2', tool: 'draft', args: { name: 'waits' } }).catch((error) => error);
    await new Promise((resolve) => setTimeout(resolve, 30));
    waiting.cancel();
    await expect(second).resolves.toMatchObject({ name: 'CancelledFailure' });
    letGo();
    await first;
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(ran).toEqual(['hold']);
    expect((await store.listTask('t')).map((intent) => intent.callId)).toEqual(['c1']);
    await store.close();
  });

  it('times a read out inside its timeout while it waits, with the executions of its earlier attempts', async () => {
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    const runs: string[] = [];
    const tool = echoTool(async ({ text }) => (runs.push(text), text === 'hold' ? held.then(() => text) : text), {
      timeout: 200,
      concurrency: 1,
    });
    const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }) });
    const first = runToolOnce(runTool, { taskId: 't', callId: 'c1', tool: 'echo', args: { text: 'hold' } }).catch((error) => error);
    const second = await runToolOnce(runTool, { taskId: 't', callId: 'c2', tool: 'echo', args: { text: 'waits' } }, { attempt: 2 }).catch(
      (error) => error,
    );
    expect(second).toBeInstanceOf(ApplicationFailure);
    expect(second).toMatchObject({ type: 'transient_failure', nonRetryable: false, details: [{ executions: 1 }] });
    expect(second.message).toMatch(/waiting for a place under its concurrency limit of 1; it did not run$/);
    letGo();
    await first;
    expect(runs).toEqual(['hold']);
  });
});

describe('runTool under the effect its own registry declares', () => {
  const sendInput = z.strictObject({ to: z.string().describe('to') });

  it('refuses a call the workflow decided under another effect, before any claim or side effect', async () => {
    let runs = 0;
    const send = defineTool({
      name: 'send',
      description: 'send',
      input: sendInput,
      effect: 'irreversible_write',
      handler: () => (runs++, 'sent'),
    });
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
    await expect(runToolOnce(runTool, { ...input, effect: 'reversible_write' })).resolves.toMatchObject({
      code: 'forbidden',
      executions: 0,
    });
    expect(runs).toBe(0);
    await expect(store.listTask('task')).resolves.toEqual([]);
    await store.close();
  });

  it('refuses a call checked under another policy (a changed timeout or argument schema) by a worker of another version', async () => {
    let runs = 0;
    const handler = () => (runs++, 'sent');
    const older = defineTool({ name: 'send', description: 'send', input: sendInput, effect: 'read', timeout: '5s', handler });
    const slower = defineTool({ name: 'send', description: 'send', input: sendInput, effect: 'read', timeout: '60s', handler });
    const wider = defineTool({
      name: 'send',
      description: 'send',
      input: z.strictObject({ to: z.string().describe('to'), cc: z.string().optional() }),
      effect: 'read',
      timeout: '5s',
      handler,
    });
    const decided = createToolRegistry({ tools: [older] }).policy('send')!;
    expect(decided.policyDigest).toMatch(/^[0-9a-f]{64}$/);
    const input = {
      taskId: 'task',
      callId: 'call-0-0',
      tool: 'send',
      args: { to: 'ops' },
      effect: 'read' as const,
      policyDigest: decided.policyDigest,
    };
    for (const running of [slower, wider]) {
      const runTool = createRunTool({ registry: createToolRegistry({ tools: [running] }) });
      await expect(runToolOnce(runTool, input)).resolves.toMatchObject({
        code: 'forbidden',
        executions: 0,
        message: expect.stringMatching(/^send is not run: the model step's worker declared another policy/),
      });
    }
    expect(runs).toBe(0);
    // The same declaration on another worker agrees, and an input that names no digest (a caller that is not a turn) runs.
    const same = createRunTool({ registry: createToolRegistry({ tools: [older] }) });
    await expect(runToolOnce(same, input)).resolves.toMatchObject({ status: 'success', executions: 1 });
    await expect(
      runToolOnce(createRunTool({ registry: createToolRegistry({ tools: [slower] }) }), { ...input, policyDigest: undefined }),
    ).resolves.toMatchObject({ status: 'success' });
    expect(runs).toBe(2);
  });

  it('runs a call whose effect agrees, and one whose caller names no effect (not a turn) under its own declaration', async () => {
    let runs = 0;
    const echo = echoTool(() => (runs++, 'said'));
    const runTool = createRunTool({ registry: createToolRegistry({ tools: [echo] }) });
    await expect(
      runToolOnce(runTool, { taskId: 't', callId: 'c1', tool: 'echo', args: { text: 'x' }, effect: 'read' }),
    ).resolves.toMatchObject({ status: 'success', executions: 1 });
    await expect(runToolOnce(runTool, { taskId: 't', callId: 'c2', tool: 'echo', args: { text: 'x' } })).resolves.toMatchObject({
      status: 'success',
      executions: 1,
    });
    await expect(
      runToolOnce(runTool, { taskId: 't', callId: 'c3', tool: 'echo', args: { text: 'x' }, effect: 'irreversible_write' }),
    ).resolves.toMatchObject({ code: 'forbidden' });
    expect(runs).toBe(2);
  });
});

describe('createToolRegistry', () => {
  it('refuses a tool declared twice', () => {
    const tool = echoTool(() => 'x');
    expect(() => createToolRegistry({ tools: [tool, tool] })).toThrow('tool "echo" is declared twice');
  });

  it('gives irreversible writes, and only them, the schedule-to-start bound of an approved call', () => {
    const send = defineTool({
      name: 'send',
      description: 'send',
      input: z.strictObject({}),
      effect: 'irreversible_write',
      handler: () => 'sent',
    });
    const registry = createToolRegistry({ tools: [echoTool(() => 'x'), send], approvedScheduleToStartMs: 90_000 });
    expect(registry.policy('send')).toMatchObject({ effect: 'irreversible_write', scheduleToStartMs: 90_000 });
    expect(registry.policy('echo')).not.toHaveProperty('scheduleToStartMs');
    expect(createToolRegistry({ tools: [send] }).policy('send')).toMatchObject({ scheduleToStartMs: 3_600_000 });
  });

  it('applies config overrides and refuses overrides for unknown tools', () => {
    const registry = createToolRegistry({ tools: [echoTool(() => 'x')], overrides: { echo: { timeout: '2s', maxAttempts: 5 } } });
    expect(registry.policy('echo')).toMatchObject({ effect: 'read', timeoutMs: 2000, maxAttempts: 5 });
    expect(() => createToolRegistry({ tools: [echoTool(() => 'x')], overrides: { ehco: {} } })).toThrow(
      'config tools.ehco: no tool named "ehco"',
    );
  });
});

describe('a tool with a heartbeat timeout', () => {
  it('beats while its call runs, so that a worker that died is noticed after the heartbeat timeout; a call without one does not beat', async () => {
    const slow = (extra: Partial<Omit<ToolSpec<typeof echoInput>, 'handler'>>) =>
      echoTool(async ({ text }) => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        return text;
      }, extra);
    const beatsOf = async (tool: ToolDefinition, heartbeatTimeoutMs: number | undefined) => {
      const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }) });
      const environment = new MockActivityEnvironment({ heartbeatTimeoutMs });
      let beats = 0;
      environment.on('heartbeat', () => beats++);
      const { result } = (await environment.run(runTool, {
        taskId: 'task',
        callId: 'call-0-0',
        tool: tool.name,
        args: { text: 'hi' },
      })) as {
        result: unknown;
      };
      expect(result).toMatchObject({ status: 'success', data: 'hi' });
      return beats;
    };
    const declared = slow({ heartbeatTimeout: '150ms' });
    expect(declared.heartbeatTimeoutMs).toBe(150);
    expect(createToolRegistry({ tools: [declared] }).policy('echo')).toMatchObject({ heartbeatTimeoutMs: 150 });
    // The workflow schedules the call with the policy's heartbeat timeout, which the activity reads from its info.
    expect(await beatsOf(declared, 150)).toBeGreaterThanOrEqual(4);
    expect(await beatsOf(slow({}), undefined)).toBe(0);
  });

  it('takes it from the config too, and refuses one of zero there', () => {
    const registry = createToolRegistry({ tools: [echoTool(() => 'x')], overrides: { echo: { heartbeatTimeout: '2s' } } });
    expect(registry.policy('echo')).toMatchObject({ heartbeatTimeoutMs: 2_000 });
    expect(toolOverrideSchema.safeParse({ heartbeatTimeout: 0 }).error?.issues[0].message).toBe('expected a duration longer than 0');
  });
});
