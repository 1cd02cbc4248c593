import { existsSync, lstatSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** Longest relative path a tool may name, and longest single segment. */
const MAX_PATH_CHARS = 512;
const MAX_SEGMENT_CHARS = 255;

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * Why a relative path may not be used under `folder` (itself inside the workspace), or nothing when
 * it may: `..`, absolute paths, NUL bytes, overlong names, and symlinks leading out are refused.
 */
export function pathRefusal(folder: string, relativePath: string): string | undefined {
  if (relativePath.includes('\u0000')) return 'the path holds a NUL byte';
  if (relativePath.length === 0) return 'the path is empty';
  if (relativePath.length > MAX_PATH_CHARS) return `the path is longer than ${MAX_PATH_CHARS} characters`;
  if (path.isAbsolute(relativePath) || /^[A-Za-z]:[\\/]/.test(relativePath)) return 'the path must be relative to the folder';
  const segments = relativePath.split(/[\\/]+/);
  if (segments.some((segment) => segment === '..')) return 'the path may not contain ".."';
  if (segments.some((segment) => segment.length > MAX_SEGMENT_CHARS)) return `a path segment is longer than ${MAX_SEGMENT_CHARS} characters`;
  const target = path.resolve(folder, relativePath);
  if (!isInside(folder, target) || target === folder) return 'the path leads out of the folder';
  // Symlinks: the deepest part that exists must resolve inside the folder, and the target itself may not be a link.
  const realFolder = existsSync(folder) ? realpathSync(folder) : folder;
  let existing = target;
  while (!existsSync(existing) && existing !== folder) existing = path.dirname(existing);
  if (existsSync(existing) && !isInside(realFolder, realpathSync(existing))) return 'the path leads out of the folder through a symbolic link';
  if (existsSync(target) && lstatSync(target).isSymbolicLink()) return 'the path is a symbolic link';
  return undefined;
}

/** The absolute path of a checked relative path; throws the refusal otherwise. */
export function resolveInside(folder: string, relativePath: string): string {
  const refusal = pathRefusal(folder, relativePath);
  if (refusal) throw new Error(refusal);
  return path.resolve(folder, relativePath);
}
