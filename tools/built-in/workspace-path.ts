import { constants, lstatSync, mkdirSync, realpathSync, type Stats } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { sha256 } from '../canonical-json';
import { taskSlug } from '../intent-key';
import { ToolError } from '../tool-error';

/** The longest file name most file systems hold, in bytes. */
export const NAME_MAX_BYTES = 255;
/** Hex characters of the tag in a temporary file's name. */
const TEMPORARY_TAG_CHARS = 16;
/** What a temporary name adds to the name it stands for: `.` + name + `.` + tag + `.tmp`. */
export const TEMPORARY_OVERHEAD_BYTES = 1 + 1 + TEMPORARY_TAG_CHARS + '.tmp'.length;
/** Longest segment of a relative path, in UTF-8 bytes: its temporary name (200 + 22 bytes) still fits in NAME_MAX_BYTES. */
export const MAX_SEGMENT_BYTES = 200;
/** Longest relative path a tool may name, in UTF-8 bytes. */
const MAX_PATH_BYTES = 512;

/** Control characters (\p{Cc}: C0, DEL, C1) and Unicode bidi controls: never part of a name. */
const CONTROL = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

function hex(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

function segmentRefusal(segment: string): string | undefined {
  if (segment === '') return 'the path has an empty segment ("//", or "/" at its end)';
  if (segment === '..') return 'the path may not contain ".."';
  if (segment === '.') return 'the path may not contain "." as a segment';
  const folded = segment.normalize('NFKC');
  if (folded === '.' || folded === '..') {
    return `the path segment "${segment}" reads as "${folded}" once Unicode look-alikes are folded (NFKC)`;
  }
  if (/[\\/]/.test(folded)) return `the path segment "${segment}" holds a character that reads as a path separator once folded (NFKC)`;
  const bytes = Buffer.byteLength(segment);
  if (bytes > MAX_SEGMENT_BYTES) {
    const why = `so its temporary file would pass the ${NAME_MAX_BYTES}-byte name limit`;
    return `a path segment is longer than ${MAX_SEGMENT_BYTES} bytes (${bytes} bytes in UTF-8), ${why}`;
  }
  return undefined;
}

/**
 * Why a relative path may not name a file in a workspace folder, or nothing when it may. Looks at
 * the name alone: NUL bytes, control and bidi characters, absolute paths, backslashes, `.` and `..`
 * (also as Unicode look-alikes, folded with NFKC), and names too long for a temporary file beside them.
 */
export function nameRefusal(relativePath: string): string | undefined {
  if (relativePath.includes('\u0000')) return 'the path holds a NUL byte';
  if (relativePath.length === 0) return 'the path is empty';
  if (Buffer.byteLength(relativePath) > MAX_PATH_BYTES) return `the path is longer than ${MAX_PATH_BYTES} bytes`;
  if (path.isAbsolute(relativePath) || /^[A-Za-z]:[\\/]/.test(relativePath)) return 'the path must be relative to the folder';
  if (relativePath.includes('\\')) return 'the path may not contain a backslash; separate folders with "/"';
  const control = CONTROL.exec(relativePath);
  if (control) return `the path holds the control character ${hex(control[0])}`;
  for (const segment of relativePath.normalize('NFC').split('/')) {
    const refusal = segmentRefusal(segment);
    if (refusal) return refusal;
  }
  return undefined;
}

/** The segments of an allowed relative path, in Unicode NFC; throws the refusal (`forbidden`, as `authorize` does) otherwise. */
export function nameSegments(relativePath: string): string[] {
  const refusal = nameRefusal(relativePath);
  if (refusal) throw new ToolError(refusal, 'forbidden');
  return relativePath.normalize('NFC').split('/');
}

/**
 * The folder of one task inside a workspace folder: the task's slug, which is the task id itself
 * when that is plain, else a readable part and a hash of the id, so two task ids never share a folder.
 */
export function taskFolderName(taskId: string): string {
  return taskSlug(taskId);
}

/** The name of the temporary file that stands in for `name` until it is renamed into place. */
export function temporaryName(name: string, tag: string): string {
  return `.${name}.${sha256(tag).slice(0, TEMPORARY_TAG_CHARS)}.tmp`;
}

/** One folder on the way to a confined folder, with the identity it had when it was checked. */
interface Step {
  path: string;
  dev: number;
  ino: number;
}

/** A folder inside the workspace, reached from the workspace's real path without symbolic links. */
export interface ConfinedFolder {
  /** Its absolute path, under the workspace's real path. */
  path: string;
  /** Its path relative to the workspace, for messages and receipts, e.g. `drafts/task-7`. */
  relative: string;
  /** The workspace and every folder below it, as first seen. */
  steps: Step[];
}

function forbidden(message: string): never {
  throw new ToolError(message, 'forbidden');
}

function lstatOrUndefined(target: string): Stats | undefined {
  try {
    return lstatSync(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function kindOf(stats: Stats): string {
  if (stats.isSymbolicLink()) return 'a symbolic link';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  if (stats.isDirectory()) return 'a folder';
  return 'not a regular file';
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * Walks from the workspace's real path down `segments`, one `lstat` per folder: a symbolic link or
 * anything but a folder on the way is refused (`forbidden`). With `create`, missing folders are
 * made; without it, a missing folder answers `undefined`. The folder's real path must stay under
 * the workspace's real path.
 */
export function reachFolder(workspace: string, segments: string[], { create }: { create: boolean }): ConfinedFolder | undefined {
  if (create) mkdirSync(workspace, { recursive: true });
  let root: string;
  try {
    root = realpathSync(workspace);
  } catch (error) {
    if (!create && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const rootStats = lstatSync(root);
  if (!rootStats.isDirectory()) forbidden('the workspace is not a folder');
  const steps: Step[] = [{ path: root, dev: rootStats.dev, ino: rootStats.ino }];
  let current = root;
  for (const [index, segment] of segments.entries()) {
    const refusal = segmentRefusal(segment);
    if (refusal) forbidden(refusal);
    const relative = segments.slice(0, index + 1).join('/');
    current = path.join(current, segment);
    let stats = lstatOrUndefined(current);
    if (!stats) {
      if (!create) return undefined;
      try {
        mkdirSync(current);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      stats = lstatSync(current);
    }
    if (stats.isSymbolicLink()) forbidden(`${relative} is a symbolic link; tools follow no links in the workspace`);
    if (!stats.isDirectory()) forbidden(`${relative} is ${kindOf(stats)}, not a folder`);
    steps.push({ path: current, dev: stats.dev, ino: stats.ino });
  }
  const real = realpathSync(current);
  if (real !== current || !isInside(root, real)) forbidden(`${segments.join('/')} resolves outside the workspace`);
  return { path: current, relative: segments.join('/'), steps };
}

/**
 * Re-checks, right before or after an operation, that every folder on the way is still the one
 * first seen (same device and inode, still no link); refuses (`forbidden`) when one was swapped.
 */
export function verifyFolder(folder: ConfinedFolder, moment: 'before' | 'after'): void {
  for (const step of folder.steps) {
    const stats = lstatOrUndefined(step.path);
    if (!stats || stats.isSymbolicLink() || !stats.isDirectory() || stats.dev !== step.dev || stats.ino !== step.ino) {
      const what = moment === 'before' ? 'nothing was done' : 'the operation may have landed elsewhere';
      forbidden(`a folder on the way to ${folder.relative} was replaced while in use; ${what}`);
    }
  }
}

/** Refuses (`forbidden`) anything at a file's place but a regular file with one link. */
function checkRegular(stats: Stats, relative: string): void {
  if (!stats.isFile()) forbidden(`${relative} is ${kindOf(stats)}; tools read and write only regular files`);
  if (stats.nlink > 1) forbidden(`${relative} has ${stats.nlink} hard links; tools touch no file that is also reachable elsewhere`);
}

/** What is at `name` in the folder: nothing (`undefined`), or a regular file with one link; anything else is refused. */
export function checkEntry(folder: ConfinedFolder, name: string): Stats | undefined {
  const stats = lstatOrUndefined(path.join(folder.path, name));
  if (stats) checkRegular(stats, `${folder.relative}/${name}`);
  return stats;
}

const WRITE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

async function writeNew(file: string, content: string): Promise<void> {
  const handle = await open(file, WRITE_NEW, 0o644);
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `name` in the folder atomically: a new temporary file beside it, renamed into place.
 * The folders are re-verified before and after the rename; a link, special file or hard-linked
 * file at `name` is refused. `tag` names the temporary file (an idempotency key, say).
 */
export async function replaceFile(folder: ConfinedFolder, name: string, content: string, tag: string): Promise<void> {
  verifyFolder(folder, 'before');
  checkEntry(folder, name);
  const temporary = path.join(folder.path, temporaryName(name, tag));
  try {
    await writeNew(temporary, content);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Left by an attempt that was cut off: remove it if it is a plain file, then write afresh.
    checkRegular(lstatSync(temporary), `${folder.relative}/${path.basename(temporary)}`);
    await unlink(temporary);
    await writeNew(temporary, content);
  }
  try {
    verifyFolder(folder, 'before');
    checkEntry(folder, name);
    await rename(temporary, path.join(folder.path, name));
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  verifyFolder(folder, 'after');
}

/**
 * Creates `name` in the folder exclusively (never following a link); answers false when it already
 * exists. The folders are re-verified before and after.
 */
export async function createFile(folder: ConfinedFolder, name: string, content: string): Promise<boolean> {
  verifyFolder(folder, 'before');
  try {
    await writeNew(path.join(folder.path, name), content);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code === 'ELOOP') forbidden(`${folder.relative}/${name} is a symbolic link`);
    throw error;
  }
  verifyFolder(folder, 'after');
  return true;
}

/** What a bounded read found: at most `maxBytes` bytes, and the file's whole size. */
export interface BoundedRead {
  data: Buffer;
  size: number;
  truncated: boolean;
}

const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

/**
 * Reads at most `maxBytes` of a file without ever blocking: opened with O_NONBLOCK and O_NOFOLLOW,
 * and refused (`forbidden`, naming it `relative`) unless `fstat` shows a regular file with one link,
 * so a FIFO or device answers at once. Answers `undefined` when there is no such file.
 */
export async function readRegular(file: string, relative: string, maxBytes: number): Promise<BoundedRead | undefined> {
  let handle;
  try {
    handle = await open(file, READ_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') forbidden(`${relative} is a symbolic link`);
    throw error;
  }
  try {
    const stats = await handle.stat();
    checkRegular(stats, relative);
    const data = Buffer.alloc(Math.min(stats.size, maxBytes));
    let filled = 0;
    while (filled < data.length) {
      const { bytesRead } = await handle.read(data, filled, data.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return { data: data.subarray(0, filled), size: stats.size, truncated: stats.size > maxBytes };
  } finally {
    await handle.close();
  }
}

/**
 * Reads at most `maxBytes` of `name` in the folder, as `readRegular` does, after checking what is
 * at its place; the folders are re-verified before and after. Answers `undefined` when there is no such file.
 */
export async function readBounded(folder: ConfinedFolder, name: string, maxBytes: number): Promise<BoundedRead | undefined> {
  verifyFolder(folder, 'before');
  const relative = `${folder.relative}/${name}`;
  if (!checkEntry(folder, name)) return undefined;
  const result = await readRegular(path.join(folder.path, name), relative, maxBytes);
  verifyFolder(folder, 'after');
  return result;
}

/**
 * Why a relative path may not be used below `segments` of the workspace right now, or nothing:
 * the name rules, then every existing folder on the way (no links, nothing outside) and what is at
 * the file's place. For a tool's `authorize`; the tool checks again at the moment of use.
 */
export function pathRefusal(workspace: string, segments: string[], relativePath: string): string | undefined {
  const refusal = nameRefusal(relativePath);
  if (refusal) return refusal;
  const parts = relativePath.normalize('NFC').split('/');
  try {
    const folder = reachFolder(workspace, [...segments, ...parts.slice(0, -1)], { create: false });
    if (folder) checkEntry(folder, parts[parts.length - 1]);
  } catch (error) {
    if (ToolError.isInstance(error)) return error.message;
    throw error;
  }
  return undefined;
}
