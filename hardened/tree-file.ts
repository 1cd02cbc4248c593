import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  opendirSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';

/**
 * A folder whose files come from someone else (a corpus, a checkout): every read and walk starts
 * from its real path, resolved once when the tree is opened, and follows no link below it.
 */
export interface Tree {
  /** The folder as it was given, for messages. */
  folder: string;
  /** Its real path: every path below is joined to this one. */
  root: string;
}

/** Why a path of a tree is not read: a stable word for programs, and a line for people. */
export type TreeRefusalReason =
  | 'symbolic_link'
  | 'hard_link'
  | 'special_file'
  | 'too_large'
  | 'too_deep'
  | 'too_many_entries'
  | 'outside_the_tree'
  | 'changed_while_read'
  | 'unreadable'
  | 'bad_path';

/** A path of a tree that is not read, and why; it never carries any of the file's content. */
export interface TreeRefusal {
  /** The path inside the tree, with `/` separators. */
  path: string;
  reason: TreeRefusalReason;
  /** One line saying what was found, e.g. "a symbolic link; files of the tree are read only where they lie". */
  detail: string;
}

/** A regular file found by a walk: its path inside the tree and its `lstat`. */
export interface TreeEntry {
  path: string;
  stats: Stats;
}

/** What a walk found: the regular files in path order, and every entry it refused. */
export interface TreeWalk {
  files: TreeEntry[];
  refused: TreeRefusal[];
}

/** The bounds of a walk. */
export interface TreeWalkOptions {
  /** The most entries (files, folders and anything else) the walk looks at; it stops there and says so. */
  maxEntries: number;
  /** The most folders below the root on a path: a file at the root has depth 0, one in `a/b/` depth 2. */
  maxDepth: number;
  /** Entries (files and folders) to leave out silently, by name, e.g. dot-files. */
  ignore?: (name: string) => boolean;
}

/** What reading one file of a tree gave: its bytes and its `fstat`, or why it was refused. */
export type TreeRead = { ok: true; bytes: Buffer; stats: Stats } | { ok: false; refusal: TreeRefusal };

/** The flags of every read: no link followed at the last step, no wait on a FIFO, no terminal taken over. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
/** Bytes read per call; a file is read in pieces so that no stat size decides how much memory is taken. */
const READ_CHUNK_BYTES = 64 * 1024;
/** Where Linux shows the path an open descriptor really names. */
const DESCRIPTOR_LINKS = '/proc/self/fd';

const LINK_DETAIL = 'a symbolic link; files of the tree are read only where they lie, and no link is followed';

/** What kind of special file `stats` describes, in words. */
function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isDirectory()) return 'a folder';
  return 'not a regular file';
}

/** The refusal of an entry by its `lstat`, or nothing for a regular file with one link. */
function entryRefusal(relative: string, stats: Stats): TreeRefusal | undefined {
  if (stats.isSymbolicLink()) return { path: relative, reason: 'symbolic_link', detail: LINK_DETAIL };
  if (!stats.isFile()) return { path: relative, reason: 'special_file', detail: `${kindOf(stats)}; only regular files are read` };
  if (stats.nlink > 1) {
    return { path: relative, reason: 'hard_link', detail: `a file with ${stats.nlink} hard links; one of them may lie outside the tree` };
  }
  return undefined;
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

/**
 * Opens a tree: its real path is resolved once, and it must be a folder; an error names the folder
 * otherwise. A root that is itself a link is followed, as it is the operator's choice.
 */
export function openTree(folder: string): Tree {
  let root: string;
  try {
    root = realpathSync(folder);
  } catch (error) {
    throw new Error(`folder ${folder} cannot be opened: ${(error as Error).message}`, { cause: error });
  }
  if (!lstatSync(root).isDirectory()) throw new Error(`folder ${folder} is not a folder`);
  return { folder, root };
}

/** The segments of a path inside a tree, or why it cannot name one (absolute, empty, `.` or `..`, a NUL). */
function segmentsOf(relative: string): string[] | string {
  if (relative.includes('\0')) return 'the path holds a NUL character';
  if (relative.startsWith('/')) return 'the path is absolute';
  const segments = relative.split('/');
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..')) {
    return 'the path has an empty, "." or ".." segment';
  }
  return segments;
}

/**
 * The `lstat` of a regular file at `relative` reached through real folders only, or the refusal
 * of the first step that is not one; `undefined` stats when nothing is there.
 */
export function lstatTreeFile(tree: Tree, relative: string): { stats?: Stats; refusal?: TreeRefusal } {
  const segments = segmentsOf(relative);
  if (typeof segments === 'string') return { refusal: { path: relative, reason: 'bad_path', detail: segments } };
  let current = tree.root;
  for (const [position, segment] of segments.entries()) {
    current = path.join(current, segment);
    const reached = segments.slice(0, position + 1).join('/');
    let stats: Stats;
    try {
      stats = lstatSync(current);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return {};
      return { refusal: { path: relative, reason: 'unreadable', detail: `cannot be examined (${errorCode(error)})` } };
    }
    if (position === segments.length - 1) {
      const refused = entryRefusal(relative, stats);
      return refused ? { refusal: refused } : { stats };
    }
    if (stats.isSymbolicLink()) return { refusal: { path: relative, reason: 'symbolic_link', detail: `${reached} is ${LINK_DETAIL}` } };
    if (!stats.isDirectory()) return {};
  }
  return {};
}

/** Whether the open descriptor names the root or a path inside it; true where the system cannot say (no /proc). */
function descriptorInside(descriptor: number, root: string): boolean {
  let target: string;
  try {
    target = readlinkSync(`${DESCRIPTOR_LINKS}/${descriptor}`);
  } catch {
    return true;
  }
  return target === root || target.startsWith(root.endsWith('/') ? root : `${root}/`);
}

/** Reads at most `maxBytes + 1` bytes of an open file, in pieces: the one byte more tells a file over the cap. */
function readCapped(descriptor: number, maxBytes: number): Buffer {
  const pieces: Buffer[] = [];
  let total = 0;
  while (total <= maxBytes) {
    const piece = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, maxBytes + 1 - total));
    const read = readSync(descriptor, piece, 0, piece.length, null);
    if (read === 0) break;
    pieces.push(read === piece.length ? piece : piece.subarray(0, read));
    total += read;
  }
  return Buffer.concat(pieces, total);
}

/**
 * Reads one file of a tree, refusing (without reading a byte of it) anything but a regular file
 * with one link reached through real folders: links are never followed (`lstat` on every step,
 * then `O_NOFOLLOW`), FIFOs and devices never block (`O_NONBLOCK`, then `fstat` on the handle),
 * and the handle must be the very file that was examined and lie inside the root. At most
 * `maxBytes + 1` bytes are ever read, whatever the stat size says, so a `/proc`-like file that
 * reports 0 bytes and reads endlessly is refused as too large once it passes the cap.
 */
export function readTreeFile(tree: Tree, relative: string, { maxBytes }: { maxBytes: number }): TreeRead {
  const examined = lstatTreeFile(tree, relative);
  if (examined.refusal) return { ok: false, refusal: examined.refusal };
  if (!examined.stats) return { ok: false, refusal: { path: relative, reason: 'unreadable', detail: 'is not there (ENOENT)' } };
  if (examined.stats.size > maxBytes) {
    return {
      ok: false,
      refusal: { path: relative, reason: 'too_large', detail: `larger than ${maxBytes} bytes (${examined.stats.size})` },
    };
  }
  let descriptor: number;
  try {
    descriptor = openSync(path.join(tree.root, relative), READ_FLAGS);
  } catch (error) {
    if (errorCode(error) === 'ELOOP') return { ok: false, refusal: { path: relative, reason: 'symbolic_link', detail: LINK_DETAIL } };
    return { ok: false, refusal: { path: relative, reason: 'unreadable', detail: `cannot be opened (${errorCode(error)})` } };
  }
  try {
    const stats = fstatSync(descriptor);
    const refused = entryRefusal(relative, stats);
    if (refused) return { ok: false, refusal: refused };
    if (stats.dev !== examined.stats.dev || stats.ino !== examined.stats.ino) {
      return {
        ok: false,
        refusal: { path: relative, reason: 'changed_while_read', detail: 'was replaced between its examination and its opening' },
      };
    }
    if (!descriptorInside(descriptor, tree.root)) {
      return {
        ok: false,
        refusal: { path: relative, reason: 'outside_the_tree', detail: 'opens a file outside the tree (a folder on its way was replaced)' },
      };
    }
    if (stats.size > maxBytes)
      return { ok: false, refusal: { path: relative, reason: 'too_large', detail: `larger than ${maxBytes} bytes (${stats.size})` } };
    let bytes: Buffer;
    try {
      bytes = readCapped(descriptor, maxBytes);
    } catch (error) {
      return { ok: false, refusal: { path: relative, reason: 'unreadable', detail: `cannot be read (${errorCode(error)})` } };
    }
    if (bytes.length > maxBytes) {
      return {
        ok: false,
        refusal: { path: relative, reason: 'too_large', detail: `reads more than ${maxBytes} bytes (its stat size says ${stats.size})` },
      };
    }
    return { ok: true, bytes, stats };
  } finally {
    closeSync(descriptor);
  }
}

/** The flags a folder is opened with before it is listed: a folder, and not through a link at the last step. */
const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Up to `limit` names of a folder's entries, read one at a time so that a huge folder is never
 * listed whole. The folder is opened first (no link at the last step) and must be the very folder
 * `expected` describes and lie inside the root; it is then listed through its open descriptor
 * where the system shows one (`/proc/self/fd`), so a folder swapped for a link after its check
 * lists nothing outside. `undefined` names when the folder changed.
 */
function someNames({ folder, root, expected, limit }: { folder: string; root: string; expected: Stats; limit: number }): {
  names?: string[];
  more: boolean;
} {
  const descriptor = openSync(folder, FOLDER_FLAGS);
  try {
    const stats = fstatSync(descriptor);
    if (stats.dev !== expected.dev || stats.ino !== expected.ino || !descriptorInside(descriptor, root)) return { more: false };
    const byDescriptor = `${DESCRIPTOR_LINKS}/${descriptor}`;
    const directory = opendirSync(existsSync(byDescriptor) ? byDescriptor : folder);
    const names: string[] = [];
    try {
      for (let entry = directory.readSync(); entry !== null; entry = directory.readSync()) {
        if (names.length === limit) return { names, more: true };
        names.push(entry.name);
      }
      return { names, more: false };
    } finally {
      directory.closeSync();
    }
  } finally {
    closeSync(descriptor);
  }
}

/**
 * Every regular file below the root, in path order, within bounds: at most `maxEntries` entries
 * looked at and `maxDepth` folders deep. No link is followed, to a folder or a file: a link, a
 * special file or a file with several hard links is refused, and so is a folder past the depth
 * bound or the rest of a folder past the entry bound, each with its path and reason. A folder that
 * cannot be listed is refused too; only an unreadable root is an error (naming it).
 */
export function walkTree(tree: Tree, { maxEntries, maxDepth, ignore }: TreeWalkOptions): TreeWalk {
  const files: TreeEntry[] = [];
  const refused: TreeRefusal[] = [];
  let seen = 0;
  let stopped = false;
  const stop = (relative: string) => {
    refused.push({
      path: relative === '' ? '.' : relative,
      reason: 'too_many_entries',
      detail: `the walk stopped after ${maxEntries} entries`,
    });
    stopped = true;
  };
  const walk = (relative: string, depth: number, expected: Stats) => {
    const folder = relative === '' ? tree.root : path.join(tree.root, relative);
    let listed: { names?: string[]; more: boolean };
    try {
      listed = someNames({ folder, root: tree.root, expected, limit: maxEntries - seen });
    } catch (error) {
      if (relative === '') throw new Error(`folder ${tree.folder} cannot be read: ${(error as Error).message}`, { cause: error });
      const reason = errorCode(error) === 'ELOOP' ? 'symbolic_link' : 'unreadable';
      refused.push({
        path: relative,
        reason: reason,
        detail: reason === 'symbolic_link' ? LINK_DETAIL : `a folder that cannot be listed (${errorCode(error)})`,
      });
      return;
    }
    if (!listed.names) {
      refused.push({
        path: relative === '' ? '.' : relative,
        reason: 'changed_while_read',
        detail: 'a folder replaced between its examination and its listing',
      });
      return;
    }
    for (const name of listed.names.sort((left, right) => (left < right ? -1 : left > right ? 1 : 0))) {
      if (seen >= maxEntries) return stop(relative);
      seen++;
      if (ignore?.(name)) continue;
      const child = relative === '' ? name : `${relative}/${name}`;
      let stats: Stats;
      try {
        stats = lstatSync(path.join(folder, name));
      } catch (error) {
        refused.push({ path: child, reason: 'unreadable', detail: `cannot be examined (${errorCode(error)})` });
        continue;
      }
      if (stats.isDirectory()) {
        if (depth + 1 > maxDepth) refused.push({ path: child, reason: 'too_deep', detail: `a folder more than ${maxDepth} folders deep` });
        else walk(child, depth + 1, stats);
        if (stopped) return;
        continue;
      }
      const entryRefused = entryRefusal(child, stats);
      if (entryRefused) refused.push(entryRefused);
      else files.push({ path: child, stats });
    }
    if (listed.more) stop(relative);
  };
  let rootStats: Stats;
  try {
    rootStats = lstatSync(tree.root);
  } catch (error) {
    throw new Error(`folder ${tree.folder} cannot be read: ${(error as Error).message}`, { cause: error });
  }
  walk('', 0, rootStats);
  return { files, refused };
}
