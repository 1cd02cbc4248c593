// The arrows between the top-level folders (docs/architecture.md, "Layers"): every relative import of every
// source file is resolved to the folder it lands in, and an import against an arrow fails with its file and line.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(__dirname, '..', '..');

/** Relative imports, re-exports, dynamic imports and requires: the specifier and the line it is on. */
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]*)['"]/gm;

interface Import {
  /** The importing file, relative to the project root with `/` separators. */
  file: string;
  line: number;
  /** The imported module, relative to the project root, without its extension. */
  target: string;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(ts|mts|cts|cjs|mjs|js)$/.test(entry.name))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
}

function importsOf(folder: string): Import[] {
  return sourceFiles(folder).flatMap((file) => {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    return [...text.matchAll(IMPORT)].map((match) => ({
      file,
      line: text.slice(0, match.index).split('\n').length,
      target: path
        .relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), match[1]))
        .split(path.sep)
        .join('/')
        .replace(/\.(ts|mts|cts|cjs|mjs|js)$/, ''),
    }));
  });
}

const topFolder = (target: string) => target.split('/')[0];
const shown = (found: Import[]) => found.map(({ file, line, target }) => `${file}:${line} imports ${target}`);

/** The worker's entry points a client may start a worker through: its library face and the `tollgate worker` command. */
const WORKER_ENTRY_POINTS = new Set(['worker/create-worker', 'worker/run-worker', 'worker/deployment']);

describe('the layers', () => {
  it('finds the imports it checks', () => {
    // A scan that matched nothing would pass every rule below.
    expect(importsOf('client').some((found) => found.target === 'client/tollgate-client')).toBe(true);
    expect(importsOf('workflows').some((found) => found.target === 'common/activity-types')).toBe(true);
  });

  it('workflows/ imports only common/: deterministic code reads no activity, store, worker or client code', () => {
    const outside = importsOf('workflows').filter((found) => !['workflows', 'common'].includes(topFolder(found.target)));
    expect(shown(outside)).toEqual([]);
  });

  it('common/ imports nothing outside itself: every side may import it', () => {
    expect(shown(importsOf('common').filter((found) => topFolder(found.target) !== 'common'))).toEqual([]);
  });

  it('client/ never imports the activities, and reaches the worker only through its entry points', () => {
    const wrong = importsOf('client').filter(
      (found) =>
        topFolder(found.target) === 'activities' || (topFolder(found.target) === 'worker' && !WORKER_ENTRY_POINTS.has(found.target)),
    );
    expect(shown(wrong)).toEqual([]);
  });

  it.each([
    ['intents', ['activities', 'worker', 'client', 'workflows', 'tools', 'testing', 'policies']],
    ['policies', ['activities', 'worker', 'client', 'workflows', 'tools', 'testing']],
    ['tools', ['activities', 'worker', 'client', 'workflows', 'intents', 'testing']],
    ['hardened', ['activities', 'worker', 'client', 'workflows', 'intents', 'tools', 'testing']],
    ['activities', ['worker', 'client', 'workflows', 'testing']],
    ['agents', ['activities', 'worker', 'client', 'workflows', 'intents', 'testing']],
  ])('%s/ imports none of the layers above it', (folder, above) => {
    expect(shown(importsOf(folder).filter((found) => above.includes(topFolder(found.target))))).toEqual([]);
  });
});
