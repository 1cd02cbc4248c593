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
  /** Whether the import brings types alone (`import type`, or every name marked `type`): nothing is loaded at run time. */
  typeOnly: boolean;
}

/** Whether the statement of an import matched at `at` brings types alone; a dynamic import, a require or a bare import never does. */
function isTypeOnly(text: string, at: number, matched: string): boolean {
  if (!matched.startsWith('from')) return false;
  // The statement starts at the last line before `from` that opens with import or export.
  const before = text.slice(0, at);
  const starts = [...before.matchAll(/(?:^|\n)[ \t]*(?=(?:import|export)\b)/g)].map((found) => found.index + found[0].length);
  const statement = starts.length > 0 ? before.slice(starts[starts.length - 1]) : '';
  if (/^(?:import|export)\s+type\b/.test(statement)) return true;
  const names = /^(?:import|export)\s*\{([^}]*)\}\s*$/.exec(statement)?.[1];
  const listed = names
    ?.split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  return listed !== undefined && listed.length > 0 && listed.every((name) => name.startsWith('type '));
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
      typeOnly: isTypeOnly(text, match.index, match[0]),
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

/**
 * The parts of config/ every layer may use: the schema parts each section is written with, and the
 * error a bad key raises. They import only common/; the rest of config/ (the assembled schema, the
 * loader) sits above the folders whose sections it gathers.
 */
const CONFIG_PARTS = new Set(['config/schema-parts', 'config/config-error', 'config/package-root']);

/** The layer a module belongs to: config/'s parts are a layer of their own, anything else its top folder. */
const layerOf = (module: string) =>
  CONFIG_PARTS.has(module.replace(/\.(ts|mts|cts|cjs|mjs|js)$/, '')) ? 'config-parts' : topFolder(module);

/** The layers, each with the layers it may import (besides itself), from the bottom up: the arrows of docs/architecture.md. */
const LAYERS: Record<string, string[]> = {
  common: [],
  'config-parts': ['common'],
  hardened: ['common', 'config-parts'],
  codec: ['common', 'config-parts', 'hardened'],
  intents: ['common', 'config-parts', 'hardened'],
  policies: ['common', 'config-parts', 'hardened', 'intents'],
  tools: ['common', 'config-parts', 'hardened'],
  notify: ['common', 'config-parts', 'hardened'],
  agents: ['common', 'config-parts', 'hardened', 'policies', 'tools'],
  connection: ['common', 'config-parts', 'hardened'],
  workflows: ['common'],
  activities: ['common', 'config-parts', 'hardened', 'intents', 'policies', 'tools', 'agents', 'notify'],
  config: ['common', 'config-parts', 'hardened', 'codec', 'intents', 'policies', 'tools', 'agents', 'notify', 'connection', 'activities'],
  server: ['common', 'config-parts', 'config', 'hardened', 'codec', 'connection'],
  worker: [
    ...['common', 'config-parts', 'config', 'hardened', 'codec', 'intents', 'policies', 'tools', 'agents', 'notify', 'connection'],
    'activities',
  ],
  client: [
    ...['common', 'config-parts', 'config', 'hardened', 'codec', 'intents', 'policies', 'tools', 'agents', 'connection'],
    ...['workflows', 'server', 'worker'],
  ],
  testing: [
    ...['common', 'config-parts', 'config', 'hardened', 'codec', 'intents', 'policies', 'tools', 'agents', 'notify', 'connection'],
    ...['workflows', 'activities', 'server', 'worker', 'client'],
  ],
  bench: [
    ...['common', 'config-parts', 'config', 'hardened', 'codec', 'intents', 'policies', 'tools', 'agents', 'notify', 'connection'],
    ...['workflows', 'activities', 'server', 'worker', 'client', 'testing'],
  ],
  // The setup and build scripts run before anything is installed or built: they import nothing of the package.
  scripts: [],
  // The `tollgate` command runs the built CLI.
  bin: ['dist', 'package.json'],
  // The examples use the package as its users do: through its entry points alone (the rule below).
  examples: ['index', 'testing'],
};

/** Top-level folders outside the layers, each with why (besides those git ignores: the build output, the dependencies, what a run writes). */
const OUTSIDE_THE_LAYERS: Record<string, string> = {
  test: 'the tests reach any module they test',
  docs: 'pages, no code',
};

/**
 * The only arrows against the layers, each with its reason; the test checks each still holds as
 * described, so an exception cannot grow into something else.
 *
 * 1. A type-only import of the assembled config (`config/config-schema`: `TollgateConfig`) from a
 *    folder below config/: the whole config is what a worker hands each part it builds; the import
 *    is erased when compiled, so nothing of config/ (nor of the sections it gathers) is loaded from
 *    below. A value from config/ below it (the loader, the schema) is still refused.
 * 2. config/ gathering the section of a folder above it (the worker's, the dev server's, the inbox's):
 *    the section lives beside the code that reads it, and imports nothing but common/ and config/'s
 *    parts, so gathering it loads nothing else of its folder.
 */
const ASSEMBLED_CONFIG = 'config/config-schema';
const SECTIONS_ABOVE_CONFIG = new Set([
  'server/dev-server-config',
  'worker/deployment-config',
  'worker/cache-config',
  'worker/telemetry/telemetry-config',
  'client/inbox/inbox-config',
]);

/** An import the layers allow, or one of the named exceptions. */
function allowed(found: Import): boolean {
  const from = layerOf(found.file);
  const to = layerOf(found.target);
  if (from === to || LAYERS[from]?.includes(to)) return true;
  if (found.target === ASSEMBLED_CONFIG && found.typeOnly) return true;
  return from === 'config' && SECTIONS_ABOVE_CONFIG.has(found.target);
}

/** Whether git ignores a top-level folder (what a build, an install or a test run writes, such as a test's copy of workflows/). */
function ignoredByGit(folder: string): boolean {
  return readFileSync(path.join(ROOT, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim().replace(/^\/|\/$/g, ''))
    .filter((pattern) => pattern && !pattern.startsWith('#') && !pattern.includes('/'))
    .some((pattern) => (pattern.endsWith('*') ? folder.startsWith(pattern.slice(0, -1)) : folder === pattern));
}

/** The folders at the top of the project, but for hidden ones and those git ignores. */
function topFolders(): string[] {
  return readdirSync(ROOT, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && !ignoredByGit(entry.name))
    .map((entry) => entry.name);
}

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
    ['notify', ['activities', 'worker', 'client', 'workflows', 'intents', 'policies', 'tools', 'agents', 'testing']],
  ])('%s/ imports none of the layers above it', (folder, above) => {
    expect(shown(importsOf(folder).filter((found) => above.includes(topFolder(found.target))))).toEqual([]);
  });

  it('places every top-level folder: in a layer, or outside the layers with its reason', () => {
    const unplaced = topFolders().filter((folder) => !(folder in LAYERS) && !(folder in OUTSIDE_THE_LAYERS));
    expect(unplaced).toEqual([]);
    // Each layer named is a folder that exists (a renamed folder must not leave a rule checking nothing).
    expect(Object.keys(LAYERS).filter((layer) => layer !== 'config-parts' && !topFolders().includes(layer))).toEqual([]);
  });

  it('tells a type-only import from one that loads the module', () => {
    const imports = importsOf('hardened').concat(importsOf('tools'), importsOf('activities'));
    const toConfig = imports.filter((found) => found.target === ASSEMBLED_CONFIG);
    expect(toConfig.length).toBeGreaterThan(0);
    expect(imports.some((found) => !found.typeOnly && found.target === 'common/defaults')).toBe(true);
  });

  it.each(Object.keys(LAYERS).filter((layer) => layer !== 'config-parts'))(
    '%s/ imports only the layers below it (and the named exceptions)',
    (folder) => {
      expect(shown(importsOf(folder).filter((found) => !allowed(found)))).toEqual([]);
    },
  );

  it("config/'s parts import only common/: every layer may use them", () => {
    const parts = importsOf('config').filter((found) => layerOf(found.file) === 'config-parts');
    expect(parts.length).toBeGreaterThan(0);
    expect(shown(parts.filter((found) => !['common', 'config-parts'].includes(layerOf(found.target))))).toEqual([]);
  });

  it('config/ gathers from the folders above it only their sections, and each imports nothing above config/', () => {
    const above = importsOf('config').filter(
      (found) => !LAYERS.config.includes(layerOf(found.target)) && layerOf(found.target) !== 'config',
    );
    expect(shown(above.filter((found) => !SECTIONS_ABOVE_CONFIG.has(found.target)))).toEqual([]);
    for (const section of SECTIONS_ABOVE_CONFIG) {
      const own = importsOf(topFolder(section)).filter((found) => found.file.replace(/\.ts$/, '') === section);
      expect(shown(own.filter((found) => !['common', 'config-parts'].includes(layerOf(found.target))))).toEqual([]);
    }
  });

  it('examples/ uses the package through its entry points alone (and each other), and the library API never loads the testing kit or the benchmarks', () => {
    expect(
      shown(
        importsOf('examples').filter((found) => !['index', 'testing'].includes(found.target) && topFolder(found.target) !== 'examples'),
      ),
    ).toEqual([]);
    const api = readFileSync(path.join(ROOT, 'index.ts'), 'utf8');
    expect(
      [...api.matchAll(IMPORT)].map((match) => match[1]).filter((specifier) => /^\.\/(testing|bench|test|scripts)\b/.test(specifier)),
    ).toEqual([]);
  });
});
