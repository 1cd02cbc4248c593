import { execFileSync, spawn } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, openSync, closeSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lstatTreeFile, openTree, readTreeFile, walkTree, type TreeRead } from '../../hardened/tree-file';
import { eventLoopProbe } from '../helpers/event-loop-probe';

const CANARY = 'OUTSIDE-CANARY-7f3a';
/** A generous bound on how long the event loop may be held by one refused read: about liveness, not speed. */
const LIVENESS_MS = 2_000;
/** How much the process may grow over a test that reads hostile files: far below what reading them whole would take. */
const MEMORY_GROWTH_BYTES = 512 * 1024 * 1024;

function folders() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-tree-'));
  const outside = mkdtempSync(path.join(os.tmpdir(), 'tollgate-tree-outside-'));
  writeFileSync(path.join(outside, 'id_rsa.md'), `-----BEGIN PRIVATE KEY----- ${CANARY}\n`);
  return { root, outside };
}

function refusalOf(read: TreeRead) {
  expect(read.ok).toBe(false);
  if (read.ok) throw new Error(`read ${read.bytes.length} bytes`);
  return read.refusal;
}

describe('readTreeFile', () => {
  it('reads a regular file inside the tree, whole, up to the cap', () => {
    const { root } = folders();
    mkdirSync(path.join(root, 'policies'));
    writeFileSync(path.join(root, 'policies', 'refunds.md'), '# Refunds\n');
    const tree = openTree(root);
    const read = readTreeFile(tree, 'policies/refunds.md', { maxBytes: 10 });
    expect(read.ok && read.bytes.toString()).toBe('# Refunds\n');
    expect(refusalOf(readTreeFile(tree, 'policies/refunds.md', { maxBytes: 9 }))).toMatchObject({ reason: 'too_large' });
  });

  it('refuses a link to a file outside, to /etc/passwd, to a file inside, and a folder on the way that is a link', () => {
    const { root, outside } = folders();
    writeFileSync(path.join(root, 'inside.md'), 'inside');
    symlinkSync(path.join(outside, 'id_rsa.md'), path.join(root, 'key.md'));
    symlinkSync('/etc/passwd', path.join(root, 'passwd.txt'));
    symlinkSync(path.join(root, 'inside.md'), path.join(root, 'alias.md'));
    symlinkSync(outside, path.join(root, 'elsewhere'));
    const tree = openTree(root);
    for (const relative of ['key.md', 'passwd.txt', 'alias.md']) {
      expect(refusalOf(readTreeFile(tree, relative, { maxBytes: 1 << 20 })), relative).toMatchObject({
        path: relative,
        reason: 'symbolic_link',
      });
    }
    const through = refusalOf(readTreeFile(tree, 'elsewhere/id_rsa.md', { maxBytes: 1 << 20 }));
    expect(through).toMatchObject({ reason: 'symbolic_link' });
    expect(through.detail).toContain('elsewhere is a symbolic link');
    expect(JSON.stringify(through)).not.toContain(CANARY);
  });

  it('refuses a hard link, a FIFO without hanging, a socket and a device', async () => {
    const { root, outside } = folders();
    linkSync(path.join(outside, 'id_rsa.md'), path.join(root, 'hard.md'));
    execFileSync('mkfifo', [path.join(root, 'pipe.md')]);
    const tree = openTree(root);
    const probe = eventLoopProbe();
    expect(refusalOf(readTreeFile(tree, 'hard.md', { maxBytes: 1 << 20 }))).toMatchObject({ reason: 'hard_link' });
    expect(refusalOf(readTreeFile(tree, 'pipe.md', { maxBytes: 1 << 20 }))).toMatchObject({
      reason: 'special_file',
      detail: expect.stringContaining('a FIFO'),
    });
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(probe.stop()).toBeLessThan(LIVENESS_MS);
    const devices = openTree('/dev');
    expect(refusalOf(readTreeFile(devices, 'zero', { maxBytes: 16 }))).toMatchObject({
      reason: 'special_file',
      detail: expect.stringContaining('character device'),
    });
    expect(refusalOf(readTreeFile(devices, 'urandom', { maxBytes: 16 }))).toMatchObject({ reason: 'special_file' });
  });

  it('refuses /proc files whose stat size is 0 but that read endlessly or fail, reading no more than the cap', () => {
    const tree = openTree('/proc/self');
    expect(lstatTreeFile(tree, 'pagemap').stats?.size).toBe(0);
    const before = process.memoryUsage().rss;
    // pagemap reads only in steps of 8 bytes: a cap of 2^20 - 1 reads 2^20 bytes and stops as too large; a cap of
    // 2^20 ends with a one-byte read the kernel answers EINVAL. Both are refused after at most cap + 1 bytes.
    expect(refusalOf(readTreeFile(tree, 'pagemap', { maxBytes: (1 << 20) - 1 }))).toEqual({
      path: 'pagemap',
      reason: 'too_large',
      detail: `reads more than ${(1 << 20) - 1} bytes (its stat size says 0)`,
    });
    expect(refusalOf(readTreeFile(tree, 'pagemap', { maxBytes: 1 << 20 }))).toEqual({
      path: 'pagemap',
      reason: 'unreadable',
      detail: 'cannot be read (EINVAL)',
    });
    expect(refusalOf(readTreeFile(tree, 'mem', { maxBytes: 1 << 20 }))).toMatchObject({ path: 'mem', reason: 'unreadable' });
    expect(process.memoryUsage().rss - before).toBeLessThan(MEMORY_GROWTH_BYTES);
  });

  it('refuses a sparse 10 GB file by its size without reading it', () => {
    const { root } = folders();
    const file = path.join(root, 'huge.md');
    closeSync(openSync(file, 'w'));
    truncateSync(file, 10 * 1024 ** 3);
    const probe = eventLoopProbe();
    expect(refusalOf(readTreeFile(openTree(root), 'huge.md', { maxBytes: 8 << 20 }))).toMatchObject({ reason: 'too_large' });
    expect(probe.stop()).toBeLessThan(LIVENESS_MS);
  });

  it('refuses paths that could name something outside: "..", absolute, empty segments, a NUL', () => {
    const { root } = folders();
    const tree = openTree(root);
    for (const relative of ['../etc/passwd', '/etc/passwd', 'a//b.md', './a.md', 'a.md\0.txt', '']) {
      expect(refusalOf(readTreeFile(tree, relative, { maxBytes: 16 })), JSON.stringify(relative)).toMatchObject({ reason: 'bad_path' });
    }
  });

  it('never returns a byte from outside while a folder on the way is swapped for a link to outside, again and again', async () => {
    const { root, outside } = folders();
    mkdirSync(path.join(root, 'sub'));
    writeFileSync(path.join(root, 'sub', 'id_rsa.md'), 'inside text\n');
    const tree = openTree(root);
    // Another process swaps `sub` for a link to the outside folder (which holds a file of the same name) and back.
    const swapper = spawn(
      'bash',
      ['-c', `cd ${root} && while true; do mv sub real && ln -s ${outside} sub && rm sub && mv real sub; done`],
      {
        stdio: 'ignore',
      },
    );
    const outcomes = new Map<string, number>();
    try {
      for (let attempt = 0; attempt < 3_000; attempt++) {
        const read = readTreeFile(tree, 'sub/id_rsa.md', { maxBytes: 1 << 16 });
        if (read.ok) expect(read.bytes.toString()).toBe('inside text\n');
        const outcome = read.ok ? 'read' : read.refusal.reason;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        if (attempt % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      swapper.kill('SIGKILL');
    }
    expect(
      [...outcomes.keys()].every((outcome) =>
        ['read', 'symbolic_link', 'unreadable', 'changed_while_read', 'outside_the_tree'].includes(outcome),
      ),
    ).toBe(true);
  });
});

describe('walkTree', () => {
  it('lists regular files in path order and refuses links, loops, special files and hard links, following none', () => {
    const { root, outside } = folders();
    mkdirSync(path.join(root, 'a', 'b'), { recursive: true });
    writeFileSync(path.join(root, 'a', 'b', 'deep.md'), 'deep');
    writeFileSync(path.join(root, 'top.md'), 'top');
    writeFileSync(path.join(root, '.hidden.md'), 'hidden');
    symlinkSync(root, path.join(root, 'loop'));
    symlinkSync('..', path.join(root, 'a', 'b', 'up'));
    symlinkSync(outside, path.join(root, 'out'));
    execFileSync('mkfifo', [path.join(root, 'pipe.md')]);
    linkSync(path.join(outside, 'id_rsa.md'), path.join(root, 'hard.md'));
    const walked = walkTree(openTree(root), { maxEntries: 100, maxDepth: 8, ignore: (name) => name.startsWith('.') });
    expect(walked.files.map((file) => file.path)).toEqual(['a/b/deep.md', 'top.md']);
    expect(walked.refused.map(({ path: where, reason }) => `${where}:${reason}`).sort()).toEqual([
      'a/b/up:symbolic_link',
      'hard.md:hard_link',
      'loop:symbolic_link',
      'out:symbolic_link',
      'pipe.md:special_file',
    ]);
    expect(JSON.stringify(walked)).not.toContain(CANARY);
  });

  it('stops at its depth and entry bounds and says where', () => {
    const { root } = folders();
    let folder = root;
    for (let depth = 0; depth < 40; depth++) {
      folder = path.join(folder, 'd');
      mkdirSync(folder);
      writeFileSync(path.join(folder, 'file.md'), String(depth));
    }
    const deep = walkTree(openTree(root), { maxEntries: 1_000, maxDepth: 5 });
    expect(deep.files).toHaveLength(5);
    expect(deep.refused).toEqual([{ path: 'd/d/d/d/d/d', reason: 'too_deep', detail: 'a folder more than 5 folders deep' }]);

    const wide = folders().root;
    for (let index = 0; index < 50; index++) writeFileSync(path.join(wide, `file-${String(index).padStart(2, '0')}.md`), 'x');
    const bounded = walkTree(openTree(wide), { maxEntries: 20, maxDepth: 5 });
    expect(bounded.files).toHaveLength(20);
    expect(bounded.refused).toEqual([{ path: '.', reason: 'too_many_entries', detail: 'the walk stopped after 20 entries' }]);
    expect(walkTree(openTree(wide), { maxEntries: 50, maxDepth: 5 })).toMatchObject({ refused: [] });
  });

  it('names a root that is missing or not a folder', () => {
    const { root } = folders();
    expect(() => openTree(path.join(root, 'missing'))).toThrow(`folder ${path.join(root, 'missing')} cannot be opened`);
    writeFileSync(path.join(root, 'file.md'), 'x');
    expect(() => openTree(path.join(root, 'file.md'))).toThrow('is not a folder');
  });
});
