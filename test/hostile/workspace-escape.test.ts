import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { createLookupStatus } from '../../activities/boundary/lookup-status';
import { createRunTool } from '../../activities/boundary/run-tool';
import { openSqliteStore } from '../../intents/sqlite-store';
import { saveDraftTool } from '../../tools/built-in/save-draft';
import { sendMessageTool } from '../../tools/built-in/send-message';
import {
  MAX_SEGMENT_BYTES,
  NAME_MAX_BYTES,
  nameRefusal,
  reachFolder,
  readBounded,
  readRegular,
  replaceFile,
  taskFolderName,
  temporaryName,
} from '../../tools/built-in/workspace-path';
import type { ToolDefinition } from '../../tools/define-tool';
import { ToolError } from '../../tools/tool-error';
import { ToolOutcome } from '../../tools/tool-outcome';
import { createToolRegistry } from '../../tools/tool-registry';
import { runToolOnce, type FlatBoundaryResult } from '../helpers/run-tool-once';

function folders() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-workspace-'));
  const outside = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-outside-'));
  return { root, outside };
}

function boundary(root: string) {
  const tools = [saveDraftTool({ workspace: root }), sendMessageTool({ workspace: root })];
  const registry = createToolRegistry({ tools });
  const store = openSqliteStore(':memory:');
  let calls = 0;
  const run = (tool: string, args: unknown, taskId = 'task-7'): Promise<FlatBoundaryResult> =>
    runToolOnce(createRunTool({ registry, store }), { taskId, callId: `call-${calls++}`, tool, args });
  const lookupStatus = createLookupStatus({ registry, store });
  const lookup = (args: unknown, taskId = 'task-7') =>
    new MockActivityEnvironment().run(lookupStatus, { taskId, callId: `call-${calls++}`, tool: 'save_draft', args });
  /** save_draft's own status check, called directly. */
  const status = (args: { path: string; content: string }) =>
    Promise.resolve().then(() => tools[0].status!(args, { taskId: 'task-7', tool: 'save_draft', idempotencyKey: 'k' }));
  return { tools, run, lookup, status };
}

/** Runs a handler directly, past `authorize`, as the boundary would once the call was scheduled. */
function handle(tool: ToolDefinition, args: unknown, taskId = 'task-7'): Promise<unknown> {
  const context = { taskId, callId: 'c', attempt: 1, signal: new AbortController().signal, idempotencyKey: `${taskId}.${tool.name}.key` };
  return Promise.resolve(tool.handler(tool.input.parse(args), context));
}

async function refusal(promise: Promise<unknown>): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

/** A call refused before it was scheduled. */
const REFUSED = { status: 'error', code: 'forbidden', executions: 0 } as const;

/** The refusal of a segment that hides `.` or `..` behind Unicode look-alikes. */
const folded = (segment: string, as: string) => `the path segment "${segment}" reads as "${as}" once Unicode look-alikes are folded (NFKC)`;

/** Every entry below a folder, recursively. */
function everything(folder: string): string[] {
  return readdirSync(folder, { recursive: true }).map(String).sort();
}

describe('the workspace guard against symbolic links', () => {
  it('refuses a drafts folder that is a link to a folder outside, before scheduling and at the moment of use', async () => {
    const { root, outside } = folders();
    symlinkSync(outside, path.join(root, 'drafts'));
    const { tools, run } = boundary(root);
    await expect(run('save_draft', { path: 'brief.md', content: 'x' })).resolves.toMatchObject({
      status: 'error',
      code: 'forbidden',
      executions: 0,
      message: 'drafts is a symbolic link; tools follow no links in the workspace',
    });
    const thrown = await refusal(handle(tools[0], { path: 'brief.md', content: 'x' }));
    expect(thrown).toMatchObject({ code: 'forbidden', message: 'drafts is a symbolic link; tools follow no links in the workspace' });
    expect(everything(outside)).toEqual([]);
  });

  it('refuses an outbox folder that is a link outside, and a link in place of the task folder', async () => {
    const { root, outside } = folders();
    symlinkSync(outside, path.join(root, 'outbox'));
    const { run } = boundary(root);
    await expect(run('send_message', { to: 'ops', subject: 'Hi', body: 'Body' })).resolves.toMatchObject({
      status: 'error',
      code: 'forbidden',
      message: 'outbox is a symbolic link; tools follow no links in the workspace',
    });
    const second = folders();
    mkdirSync(path.join(second.root, 'outbox'));
    symlinkSync(second.outside, path.join(second.root, 'outbox', 'task-7'));
    await expect(boundary(second.root).run('send_message', { to: 'ops', subject: 'Hi', body: 'Body' })).resolves.toMatchObject({
      status: 'error',
      code: 'forbidden',
      message: 'outbox/task-7 is a symbolic link; tools follow no links in the workspace',
    });
    expect(everything(outside)).toEqual([]);
    expect(everything(second.outside)).toEqual([]);
  });

  it("refuses a link to a file inside the workspace at a draft's place", async () => {
    const { root } = folders();
    mkdirSync(path.join(root, 'drafts', 'task-7'), { recursive: true });
    writeFileSync(path.join(root, 'notes.md'), 'keep');
    symlinkSync(path.join(root, 'notes.md'), path.join(root, 'drafts', 'task-7', 'brief.md'));
    const { tools, run } = boundary(root);
    await expect(run('save_draft', { path: 'brief.md', content: 'x' })).resolves.toMatchObject(REFUSED);
    expect((await refusal(handle(tools[0], { path: 'brief.md', content: 'x' }))).message).toBe(
      'drafts/task-7/brief.md is a symbolic link; tools read and write only regular files',
    );
    expect(readFileSync(path.join(root, 'notes.md'), 'utf8')).toBe('keep');
  });

  it('refuses to write when a folder on the way is swapped for a link (or another folder) after it was checked', async () => {
    const { root, outside } = folders();
    const folder = reachFolder(root, ['drafts', 'task-7'], { create: true })!;
    renameSync(path.join(root, 'drafts', 'task-7'), path.join(root, 'drafts', 'moved'));
    symlinkSync(outside, path.join(root, 'drafts', 'task-7'));
    const swapped = await refusal(replaceFile(folder, 'brief.md', 'x', 'tag'));
    expect(swapped).toMatchObject({
      code: 'forbidden',
      message: 'a folder on the way to drafts/task-7 was replaced while in use; nothing was done',
    });
    expect(everything(outside)).toEqual([]);

    const again = reachFolder(root, ['drafts', 'other'], { create: true })!;
    renameSync(path.join(root, 'drafts'), path.join(root, 'drafts-old'));
    mkdirSync(path.join(root, 'drafts', 'other'), { recursive: true });
    expect((await refusal(replaceFile(again, 'brief.md', 'x', 'tag'))).code).toBe('forbidden');
    expect(everything(path.join(root, 'drafts'))).toEqual(['other']);
  });

  it('follows a workspace that is itself a link, since only what lies below it is checked', async () => {
    const { root } = folders();
    const alias = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-alias-')), 'workspace');
    symlinkSync(root, alias);
    await expect(boundary(alias).run('save_draft', { path: 'brief.md', content: 'x' })).resolves.toMatchObject({ status: 'success' });
    expect(readFileSync(path.join(root, 'drafts', 'task-7', 'brief.md'), 'utf8')).toBe('x');
  });
});

describe('the workspace guard against special files and hard links', () => {
  it("answers a status check on a FIFO at the draft's place at once, and never writes over it", async () => {
    const { root } = folders();
    mkdirSync(path.join(root, 'drafts', 'task-7'), { recursive: true });
    execFileSync('mkfifo', [path.join(root, 'drafts', 'task-7', 'brief.md')]);
    const { tools, run, lookup, status } = boundary(root);
    const started = Date.now();
    const thrown = await refusal(status({ path: 'brief.md', content: 'x' }));
    expect(thrown).toMatchObject({
      code: 'forbidden',
      message: 'drafts/task-7/brief.md is a FIFO (named pipe); tools read and write only regular files',
    });
    const looked = await lookup({ path: 'brief.md', content: 'x' });
    expect(looked).toMatchObject({ state: 'unknown', reason: expect.stringContaining('FIFO') });
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect(run('save_draft', { path: 'brief.md', content: 'x' })).resolves.toMatchObject(REFUSED);
    expect((await refusal(handle(tools[0], { path: 'brief.md', content: 'x' }))).message).toContain('is a FIFO (named pipe)');
    expect(readdirSync(path.join(root, 'drafts', 'task-7'))).toEqual(['brief.md']);
  });

  it('never blocks on a FIFO that appears after the check: the read opens without blocking and looks with fstat', async () => {
    const { root } = folders();
    const folder = reachFolder(root, ['drafts', 'task-7'], { create: true })!;
    execFileSync('mkfifo', [path.join(folder.path, 'late.md')]);
    const started = Date.now();
    await expect(readBounded(folder, 'late.md', 100)).rejects.toMatchObject({ code: 'forbidden' });
    await expect(readRegular(path.join(folder.path, 'late.md'), 'late.md', 100)).rejects.toMatchObject({
      code: 'forbidden',
      message: 'late.md is a FIFO (named pipe); tools read and write only regular files',
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    writeFileSync(path.join(folder.path, 'big.md'), 'x'.repeat(1_000));
    const big = await readRegular(path.join(folder.path, 'big.md'), 'big.md', 10);
    expect(big).toMatchObject({ size: 1_000, truncated: true, data: Buffer.from('x'.repeat(10)) });
  });

  it("refuses a device file at a draft's place, for reading and writing", async () => {
    const { root } = folders();
    const drafts = path.join(root, 'drafts', 'task-7');
    mkdirSync(drafts, { recursive: true });
    execFileSync('mknod', [path.join(drafts, 'null.md'), 'c', '1', '3']);
    const { tools, status } = boundary(root);
    const read = await refusal(status({ path: 'null.md', content: '' }));
    expect(read.message).toBe('drafts/task-7/null.md is a character device; tools read and write only regular files');
    expect((await refusal(handle(tools[0], { path: 'null.md', content: 'x' }))).code).toBe('forbidden');
  });

  it('treats a hard link to a file outside as outside: no write through it, no status read of it', async () => {
    const { root, outside } = folders();
    const secret = path.join(outside, 'secret.txt');
    writeFileSync(secret, 'outside content');
    mkdirSync(path.join(root, 'drafts', 'task-7'), { recursive: true });
    linkSync(secret, path.join(root, 'drafts', 'task-7', 'brief.md'));
    const { tools, run, status } = boundary(root);
    await expect(run('save_draft', { path: 'brief.md', content: 'replaced' })).resolves.toMatchObject({
      status: 'error',
      code: 'forbidden',
      executions: 0,
      message: 'drafts/task-7/brief.md has 2 hard links; tools touch no file that is also reachable elsewhere',
    });
    expect((await refusal(handle(tools[0], { path: 'brief.md', content: 'replaced' }))).code).toBe('forbidden');
    expect((await refusal(status({ path: 'brief.md', content: 'outside content' }))).message).toContain('has 2 hard links');
    expect(readFileSync(secret, 'utf8')).toBe('outside content');
  });
});

describe('the workspace guard on names', () => {
  it('saves a 199-character name, whose temporary file still fits the name limit', async () => {
    const { root } = folders();
    const name = `${'a'.repeat(196)}.md`;
    expect(name).toHaveLength(199);
    expect(Buffer.byteLength(temporaryName('x'.repeat(MAX_SEGMENT_BYTES), 'any tag'))).toBeLessThanOrEqual(NAME_MAX_BYTES);
    const { run } = boundary(root);
    await expect(run('save_draft', { path: name, content: 'long' })).resolves.toMatchObject({ status: 'success', executions: 1 });
    expect(readdirSync(path.join(root, 'drafts', 'task-7'))).toEqual([name]);
  });

  it('refuses a name too long in bytes with a clear message, never ENAMETOOLONG', async () => {
    const { root } = folders();
    const name = `${'é'.repeat(196)}.md`;
    expect(name).toHaveLength(199);
    const { tools, run } = boundary(root);
    const result = await run('save_draft', { path: name, content: 'long' });
    expect(result).toMatchObject({ status: 'error', code: 'forbidden', executions: 0 });
    expect(result.status === 'error' && result.message).toBe(
      'a path segment is longer than 200 bytes (395 bytes in UTF-8), so its temporary file would pass the 255-byte name limit',
    );
    const thrown = await refusal(handle(tools[0], { path: name, content: 'long' }));
    expect(thrown).toMatchObject({ code: 'forbidden', message: expect.stringContaining('longer than 200 bytes') });
  });

  it('refuses ".." and separators hidden in Unicode look-alikes, and stores names in NFC', async () => {
    expect(nameRefusal('\uff0e\uff0e/secret.md')).toBe(folded('\uff0e\uff0e', '..'));
    expect(nameRefusal('\u2024\u2024/secret.md')).toBe(folded('\u2024\u2024', '..'));
    expect(nameRefusal('\u2025/secret.md')).toMatch(/reads as "\.\." once/);
    expect(nameRefusal('\ufe52')).toMatch(/reads as "\." once/);
    expect(nameRefusal('a\uff0fb.md')).toBe(
      'the path segment "a\uff0fb.md" holds a character that reads as a path separator once folded (NFKC)',
    );
    expect(nameRefusal('a\uff3cb.md')).toMatch(/reads as a path separator/);
    expect(nameRefusal('a\\b.md')).toBe('the path may not contain a backslash; separate folders with "/"');
    expect(nameRefusal('a//b.md')).toMatch(/empty segment/);
    expect(nameRefusal('./b.md')).toBe('the path may not contain "." as a segment');
    expect(nameRefusal('brief\u202egpj.md')).toBe('the path holds the control character U+202E');
    expect(nameRefusal('line\nbreak.md')).toBe('the path holds the control character U+000A');
    const { root } = folders();
    const { run } = boundary(root);
    await expect(run('save_draft', { path: '\uff0e\uff0e/\uff0e\uff0e/escape.md', content: 'x' })).resolves.toMatchObject(REFUSED);
    const saved = await run('save_draft', { path: 'cafe\u0301.md', content: 'x' });
    expect(saved).toMatchObject({ status: 'success', data: { path: 'drafts/task-7/caf\u00e9.md' } });
    expect(readdirSync(path.join(root, 'drafts', 'task-7'))).toEqual(['caf\u00e9.md']);
    expect(everything(root)).toEqual(['drafts', 'drafts/task-7', 'drafts/task-7/caf\u00e9.md']);
  });
});

describe('per-task folders', () => {
  it('keeps the drafts and messages of two tasks apart, even for the same name', async () => {
    const { root } = folders();
    const { run } = boundary(root);
    const first = await run('save_draft', { path: 'brief.md', content: 'from a' }, 'task-a');
    const second = await run('save_draft', { path: 'brief.md', content: 'from b' }, 'task-b');
    expect(first).toMatchObject({ status: 'success', data: { path: 'drafts/task-a/brief.md' } });
    expect(second).toMatchObject({ status: 'success', data: { path: 'drafts/task-b/brief.md' } });
    expect(readFileSync(path.join(root, 'drafts', 'task-a', 'brief.md'), 'utf8')).toBe('from a');
    expect(readFileSync(path.join(root, 'drafts', 'task-b', 'brief.md'), 'utf8')).toBe('from b');
    await run('send_message', { to: 'ops', subject: 'Hi', body: 'Body' }, 'task-a');
    await run('send_message', { to: 'ops', subject: 'Hi', body: 'Body' }, 'task-b');
    expect(readdirSync(path.join(root, 'outbox', 'task-a'))).toHaveLength(1);
    expect(readdirSync(path.join(root, 'outbox', 'task-b'))).toHaveLength(1);
  });

  it('gives two task ids with the same slug different folders', async () => {
    expect(taskFolderName('task-7')).toBe('task-7');
    expect(taskFolderName('a/b')).not.toBe(taskFolderName('a:b'));
    expect(taskFolderName('a/b')).toMatch(/^a-b\.[0-9a-f]{24}$/);
    const { root } = folders();
    const { run } = boundary(root);
    await run('save_draft', { path: 'brief.md', content: 'slash' }, 'a/b');
    await run('save_draft', { path: 'brief.md', content: 'colon' }, 'a:b');
    expect(readFileSync(path.join(root, 'drafts', taskFolderName('a/b'), 'brief.md'), 'utf8')).toBe('slash');
    expect(readFileSync(path.join(root, 'drafts', taskFolderName('a:b'), 'brief.md'), 'utf8')).toBe('colon');
  });

  it('answers a repeated message from the file already delivered, read back bounded', async () => {
    const { root } = folders();
    const { tools } = boundary(root);
    const first = await handle(tools[1], { to: 'ops', subject: 'Hi', body: 'Body' });
    const again = await handle(tools[1], { to: 'ops', subject: 'Hi', body: 'Body' });
    expect(ToolOutcome.is(first) && first.ok && first.data).toMatchObject({ delivered: 'outbox/task-7/task-7.send_message.key.json' });
    expect(ToolOutcome.is(again) && again.ok && again.data).toMatchObject({ alreadyDelivered: true });
    expect(readdirSync(path.join(root, 'outbox', 'task-7'))).toEqual(['task-7.send_message.key.json']);
  });
});
