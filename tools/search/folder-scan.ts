// What of a corpus folder is a document: the walk under its bounds, the formats read, the files refused, and each document's id.
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { walkTree, type Tree, type TreeRefusal } from '../../hardened/tree-file';
import { formatOf, type DocumentFormat } from './document-text';

/** Files larger than this are refused (and counted): never more than one byte past it is read, whatever the file's stat says. */
export const MAX_FILE_BYTES = 8 * 1024 * 1024;
/** A refresh looks at most at this many entries (files, folders, anything) of the folder; the rest is refused and counted. */
export const MAX_CORPUS_ENTRIES = 20_000;
/** A refresh goes at most this many folders deep; deeper folders are refused and counted. */
export const MAX_CORPUS_DEPTH = 16;

/** A file of the folder that the index reads: its path in the folder, its stat and its format. */
export interface ScannedFile {
  path: string;
  stats: Stats;
  format: DocumentFormat;
}

/** The SHA-256 of a file's bytes: a changed mtime with the same content rewrites nothing. */
export function hashOf(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A file with a NUL byte in its first 8 KiB is taken for binary and skipped. */
export function looksBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, 8192).includes(0);
}

/**
 * Every file under the folder (dot-files and dot-folders left out), split into those the index
 * reads, those it skips (other formats) and those the tree refuses (links, special files, past
 * the walk's bounds), each refusal with its path and reason.
 */
export function scanFolder(tree: Tree): { files: ScannedFile[]; skipped: Array<{ path: string; reason: string }>; refused: TreeRefusal[] } {
  const walked = walkTree(tree, { maxEntries: MAX_CORPUS_ENTRIES, maxDepth: MAX_CORPUS_DEPTH, ignore: (name) => name.startsWith('.') });
  const files: ScannedFile[] = [];
  const skipped: Array<{ path: string; reason: string }> = walked.refused.map(({ path: where, detail }) => ({
    path: where,
    reason: detail,
  }));
  for (const entry of walked.files) {
    const format = formatOf(path.extname(entry.path));
    if (!format) skipped.push({ path: entry.path, reason: 'not markdown, text or html' });
    else if (entry.stats.size > MAX_FILE_BYTES) {
      const refusal: TreeRefusal = {
        path: entry.path,
        reason: 'too_large',
        detail: `larger than ${MAX_FILE_BYTES} bytes (${entry.stats.size})`,
      };
      walked.refused.push(refusal);
      skipped.push({ path: entry.path, reason: refusal.detail });
    } else files.push({ path: entry.path, stats: entry.stats, format });
  }
  return { files, skipped, refused: walked.refused };
}

/** A document's id: its path with `.md` left off (`refund-policy.md` → `refund-policy`), other extensions kept. */
export function documentId(relativePath: string): string {
  return relativePath.endsWith('.md') ? relativePath.slice(0, -'.md'.length) : relativePath;
}
