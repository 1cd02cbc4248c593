import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkToolCall } from '../../activities/boundary/check-tool-call';
import { defineTool } from '../../tools/define-tool';
import { openSqliteStore } from '../../intents/sqlite-store';
import { intentKey } from '../../tools/intent-key';
import { argsDigest } from '../../tools/canonical-json';
import { createLookupStatus } from '../../activities/boundary/lookup-status';
import { createRunTool } from '../../activities/boundary/run-tool';
import { createToolRegistry } from '../../tools/tool-registry';
import { saveDraftTool } from '../../tools/built-in/save-draft';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { bubblewrapAvailable, shellTool } from '../../tools/built-in/shell';
import { pathRefusal } from '../../tools/built-in/workspace-path';
import type { ToolDefinition } from '../../tools/define-tool';
import { runToolOnce, type FlatBoundaryResult } from '../helpers/run-tool-once';

function workspace(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'tollgate-workspace-'));
}

function boundary(tools: ToolDefinition[]) {
  const registry = createToolRegistry({ tools });
  const store = openSqliteStore(':memory:');
  return { registry, store, runTool: createRunTool({ registry, store }), lookupStatus: createLookupStatus({ registry, store }) };
}

function call(runTool: ReturnType<typeof createRunTool>, tool: string, args: unknown, callId = 'call-0-0'): Promise<FlatBoundaryResult> {
  return runToolOnce(runTool, { taskId: 'task-7', callId, tool, args });
}

describe('defineTool', () => {
  it('refuses a reversible write without a status lookup, at compile time and at run time', () => {
    expect(() =>
      // @ts-expect-error: a reversible_write's traits require a status check, so the declaration does not compile.
      defineTool({ name: 'risky', description: 'x', input: z.object({}), effect: 'reversible_write', handler: () => 'done' }),
    ).toThrow('tool risky: a reversible_write needs a status lookup (status)');
  });

  it('refuses a status lookup on a read, and an idempotency key, at compile time and at run time', () => {
    const input = z.object({});
    expect(() =>
      // @ts-expect-error: a read takes no status check (its traits say none).
      defineTool({ name: 'peek', description: 'x', input, effect: 'read', status: () => 'applied' as const, handler: () => 'seen' }),
    ).toThrow('tool peek: a read takes no status lookup (status)');
    // @ts-expect-error: only writes are recorded as intents, so only they take an idempotency key.
    defineTool({ name: 'peek', description: 'x', input, effect: 'read', idempotencyKey: () => 'k', handler: () => 'seen' });
  });

  it('refuses an effect that is not a level', () => {
    expect(() =>
      // @ts-expect-error: not one of ToolEffect.
      defineTool({ name: 'odd', description: 'x', input: z.object({}), effect: 'append_only', handler: () => 'done' }),
    ).toThrow('tool odd: effect must be one of read, reversible_write, irreversible_write, got "append_only"');
  });
});

describe('the workspace path guard', () => {
  it('refuses .., absolute paths, NUL bytes, overlong paths and symlinks on the way', () => {
    const root = workspace();
    const drafts = path.join(root, 'drafts');
    mkdirSync(drafts, { recursive: true });
    const outside = mkdtempSync(path.join(os.tmpdir(), 'tollgate-outside-'));
    symlinkSync(outside, path.join(drafts, 'exit'));
    const refusal = (relative: string) => pathRefusal(root, ['drafts'], relative);
    expect(refusal('../secrets.md')).toBe('the path may not contain ".."');
    expect(refusal('a/../../b.md')).toBe('the path may not contain ".."');
    expect(refusal('/etc/passwd')).toBe('the path must be relative to the folder');
    expect(refusal('a\u0000b')).toBe('the path holds a NUL byte');
    expect(refusal('x'.repeat(600))).toMatch(/longer than 512/);
    expect(refusal(`${'y'.repeat(300)}.md`)).toMatch(/segment is longer than 200 bytes/);
    expect(refusal('exit/note.md')).toBe('drafts/exit is a symbolic link; tools follow no links in the workspace');
    expect(refusal('fine/brief.md')).toBeUndefined();
  });
});

describe('save_draft', () => {
  it('writes atomically, answers its status from the file, and never writes one intent twice', async () => {
    const root = workspace();
    const { runTool, lookupStatus, store } = boundary([saveDraftTool({ workspace: root })]);
    const args = { path: 'brief.md', content: '# Brief\n' };
    const lookup = () => new MockActivityEnvironment().run(lookupStatus, { taskId: 'task-7', callId: 'c', tool: 'save_draft', args });
    await expect(lookup()).resolves.toEqual({ state: 'not_applied' });
    await expect(call(runTool, 'save_draft', args)).resolves.toMatchObject({
      status: 'success',
      executions: 1,
      data: { path: 'drafts/task-7/brief.md', bytes: 8 },
    });
    expect(readFileSync(path.join(root, 'drafts', 'task-7', 'brief.md'), 'utf8')).toBe('# Brief\n');
    expect(readdirSync(path.join(root, 'drafts'))).toEqual(['task-7']);
    expect(readdirSync(path.join(root, 'drafts', 'task-7'))).toEqual(['brief.md']);
    await expect(lookup()).resolves.toMatchObject({ state: 'applied', source: 'store' });
    await expect(call(runTool, 'save_draft', args, 'call-1-0')).resolves.toMatchObject({ status: 'success', executions: 0 });
    await store.close();
  });

  it('finds a draft written before the store knew of it, through its own status check', async () => {
    const root = workspace();
    mkdirSync(path.join(root, 'drafts', 't'), { recursive: true });
    writeFileSync(path.join(root, 'drafts', 't', 'old.md'), 'same');
    const { lookupStatus } = boundary([saveDraftTool({ workspace: root })]);
    const found = await new MockActivityEnvironment().run(lookupStatus, {
      taskId: 't',
      callId: 'c',
      tool: 'save_draft',
      args: { path: 'old.md', content: 'same' },
    });
    expect(found).toMatchObject({ state: 'applied', source: 'tool', receipt: { status: 'success', data: { path: 'drafts/t/old.md' } } });
  });

  it('refuses a symlink escape as forbidden and writes nothing outside', async () => {
    const root = workspace();
    const outside = mkdtempSync(path.join(os.tmpdir(), 'tollgate-outside-'));
    mkdirSync(path.join(root, 'drafts', 'task-7'), { recursive: true });
    symlinkSync(outside, path.join(root, 'drafts', 'task-7', 'link'));
    const { runTool } = boundary([saveDraftTool({ workspace: root })]);
    await expect(call(runTool, 'save_draft', { path: 'link/x.md', content: 'x' })).resolves.toMatchObject({
      status: 'error',
      code: 'forbidden',
      executions: 0,
    });
    expect(readdirSync(outside)).toEqual([]);
  });
});

describe('send_message', () => {
  it('delivers one file named by the idempotency key, and answers a repeat from the receipt', async () => {
    const root = workspace();
    const { runTool } = boundary([sendMessageTool({ workspace: root })]);
    const args = { to: 'ops', subject: 'Hi', body: 'Body' };
    const first = await call(runTool, 'send_message', args);
    expect(first).toMatchObject({ status: 'success', executions: 1 });
    expect(readdirSync(path.join(root, 'outbox'))).toEqual(['task-7']);
    const files = readdirSync(path.join(root, 'outbox', 'task-7'));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^task-7\.send_message\.[0-9a-f]{24}\.json$/);
    expect(first).toMatchObject({ data: { delivered: `outbox/task-7/${files[0]}` } });
    expect(JSON.parse(readFileSync(path.join(root, 'outbox', 'task-7', files[0]), 'utf8'))).toMatchObject({
      to: 'ops',
      subject: 'Hi',
      body: 'Body',
    });
    await expect(call(runTool, 'send_message', args, 'call-5-0')).resolves.toMatchObject({ status: 'success', executions: 0 });
    expect(readdirSync(path.join(root, 'outbox', 'task-7'))).toHaveLength(1);
  });

  it('never runs again an intent that was started and never confirmed', async () => {
    const root = workspace();
    const send = sendMessageTool({ workspace: root });
    const { runTool, store } = boundary([send]);
    const args = { to: 'ops', subject: 'Hi', body: 'Body' };
    // As a worker that died after recording the intent and before confirming it leaves the store.
    await store.claim({
      key: intentKey(send, args, 'task-7'),
      taskId: 'task-7',
      tool: 'send_message',
      callId: 'call-0-0',
      argsDigest: argsDigest(args),
      effect: 'irreversible_write',
      leaseMs: 10_000,
    });
    await expect(call(runTool, 'send_message', args, 'call-2-0')).resolves.toMatchObject({
      status: 'error',
      code: 'outcome_unknown',
      executions: 0,
    });
    expect(existsSync(path.join(root, 'outbox'))).toBe(false);
  });
});

describe('send_message status check', () => {
  it('finds a message in its outbox file: not applied before, applied with the file after, cannot tell from a broken file', async () => {
    const root = workspace();
    const send = sendMessageTool({ workspace: root });
    const { runTool } = boundary([send]);
    const args = { to: 'ops', subject: 'Hi', body: 'Body' };
    const context = { taskId: 'task-7', tool: 'send_message', idempotencyKey: intentKey(send, args, 'task-7') };
    await expect(send.status!(args, context)).resolves.toBe('not_applied');
    const sent = await call(runTool, 'send_message', args);
    expect(sent).toMatchObject({ status: 'success', executions: 1 });
    const file = `outbox/task-7/${context.idempotencyKey}.json`;
    await expect(send.status!(args, context)).resolves.toEqual({
      state: 'applied',
      data: { delivered: file, sentAt: (sent.data as { sentAt: string }).sentAt, alreadyDelivered: true },
    });
    // Another message of the same task has its own file: still not applied.
    const other = { ...args, body: 'Other' };
    await expect(send.status!(other, { ...context, idempotencyKey: intentKey(send, other, 'task-7') })).resolves.toBe('not_applied');
    writeFileSync(path.join(root, file), '{ not json');
    await expect(send.status!(args, context)).resolves.toBe('unknown');
  });
});

describe('shell', () => {
  it('succeeds or fails by exit code alone', async () => {
    const root = workspace();
    const { runTool } = boundary([shellTool({ workspace: root })]);
    await expect(call(runTool, 'shell', { command: 'echo "Error: this is fine"; exit 0' })).resolves.toMatchObject({
      status: 'success',
      data: { exitCode: 0, output: 'Error: this is fine\n' },
    });
    await expect(call(runTool, 'shell', { command: 'exit 1' }, 'call-1-0')).resolves.toMatchObject({
      status: 'error',
      code: 'tool_failure',
      message: 'the command exited with code 1',
    });
  });

  it('runs in the workspace and truncates long output', async () => {
    const root = workspace();
    const { runTool } = boundary([shellTool({ workspace: root })]);
    const result = await call(runTool, 'shell', { command: 'pwd; head -c 20000 /dev/zero | tr "\\0" x' });
    expect(result).toMatchObject({ status: 'success', truncated: true });
    expect(result.originalSize).toBeGreaterThan(20_000);
    expect(String(result.data)).toContain(root);
  });
});

describe('shell in the bubblewrap sandbox', () => {
  it('writes only in the workspace, sees a read-only system and has no network', async () => {
    expect(bubblewrapAvailable(), 'bubblewrap (bwrap) must be installed, as .ci/run does').toBe(true);
    const root = workspace();
    const outside = mkdtempSync(path.join(os.tmpdir(), 'tollgate-outside-'));
    let connections = 0;
    const listener = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const { port } = listener.address() as net.AddressInfo;
    const { runTool } = boundary([shellTool({ workspace: root, sandbox: true })]);
    try {
      await expect(call(runTool, 'shell', { command: 'echo inside > note.txt && cat note.txt' })).resolves.toMatchObject({
        status: 'success',
        data: { output: 'inside\n' },
      });
      expect(readFileSync(path.join(root, 'note.txt'), 'utf8')).toBe('inside\n');
      await expect(call(runTool, 'shell', { command: `echo escape > ${outside}/escape.txt` }, 'c2')).resolves.toMatchObject({
        status: 'error',
        code: 'tool_failure',
      });
      await expect(call(runTool, 'shell', { command: 'touch /etc/tollgate-was-here' }, 'c3')).resolves.toMatchObject({
        status: 'error',
        message: expect.stringContaining('Read-only file system'),
      });
      await expect(call(runTool, 'shell', { command: `exec 3<>/dev/tcp/127.0.0.1/${port}` }, 'c4')).resolves.toMatchObject({
        status: 'error',
        code: 'tool_failure',
      });
      expect(readdirSync(outside)).toEqual([]);
      expect(existsSync('/etc/tollgate-was-here')).toBe(false);
      expect(connections).toBe(0);
    } finally {
      await new Promise((resolve) => listener.close(resolve));
    }
  });

  it('says so when there is no sandbox, and then every shell call needs approval', () => {
    const warnings: string[] = [];
    const tool = shellTool({ workspace: workspace(), effect: 'read', sandbox: false, warn: (line) => warnings.push(line) });
    expect(tool.effect).toBe('irreversible_write');
    expect(warnings).toEqual([
      'shell: bubblewrap (bwrap) is not available, so shell commands run unsandboxed and every shell call needs approval',
    ]);
  });
});

describe('the boundary under random arguments', () => {
  it('either validates a call or refuses it with invalid_arguments, and never runs the handler on invalid input', async () => {
    let executions = 0;
    const root = workspace();
    const drafts = saveDraftTool({ workspace: root });
    const counted: ToolDefinition = { ...drafts, handler: (args, context) => (executions++, drafts.handler(args, context)) };
    const { registry, runTool } = boundary([counted]);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.anything(),
          fc.record(
            { path: fc.oneof(fc.string(), fc.integer()), content: fc.oneof(fc.string(), fc.constant(null)), extra: fc.anything() },
            { requiredKeys: [] },
          ),
          fc.record({ path: fc.string({ maxLength: 20 }), content: fc.string({ maxLength: 20 }) }),
        ),
        async (args) => {
          const before = executions;
          const checked = checkToolCall({ registry, request: { callId: 'c', tool: 'save_draft', args } });
          const valid = drafts.input.safeParse(args).success;
          if (!valid) {
            expect(checked.refusal?.code).toBe('invalid_arguments');
            const result = await call(runTool, 'save_draft', args);
            expect(result).toMatchObject({ status: 'error', code: 'invalid_arguments', executions: 0 });
            expect(executions).toBe(before);
          } else {
            expect(['forbidden', undefined]).toContain(checked.refusal?.code);
          }
        },
      ),
      { numRuns: 500 },
    );
    expect(existsSync(path.join(root, 'drafts'))).toBe(false);
  });
});
