// The browser modules the inbox page imports, served from the installed packages' own ES module
// builds (no bundling step) and named by an import map, so the page imports them by package name.
import { existsSync } from 'node:fs';
import path from 'node:path';

/** One package's ES module folder, served under a prefix. */
export interface VendorModule {
  /** The specifiers the page imports, each with its file below the folder. */
  specifiers: Record<string, string>;
  folder: string;
  prefix: string;
}

/** The packages the page uses: Preact (components), htm (templates), Preact signals (state), SimpleWebAuthn (passkeys), a JSON Schema validator, and a diff. */
const PACKAGES: Array<{ name: string; folder: string; specifiers: Record<string, string> }> = [
  {
    name: 'preact',
    folder: '.',
    specifiers: { preact: 'dist/preact.mjs', 'preact/hooks': 'hooks/dist/hooks.mjs' },
  },
  { name: 'htm', folder: 'dist', specifiers: { htm: 'htm.module.js' } },
  { name: '@preact/signals-core', folder: 'dist', specifiers: { '@preact/signals-core': 'signals-core.module.js' } },
  { name: '@preact/signals', folder: 'dist', specifiers: { '@preact/signals': 'signals.module.js' } },
  { name: '@simplewebauthn/browser', folder: 'esm', specifiers: { '@simplewebauthn/browser': 'index.js' } },
  { name: '@cfworker/json-schema', folder: 'dist/esm', specifiers: { '@cfworker/json-schema': 'index.js' } },
  { name: 'diff', folder: 'libesm', specifiers: { diff: 'index.js' } },
];

/** A package's folder, found where Node.js looks for it (its exports may not name its package.json). */
function packageFolder(name: string): string {
  for (const folder of require.resolve.paths(name) ?? []) {
    if (existsSync(path.join(folder, name, 'package.json'))) return path.join(folder, name);
  }
  throw new Error(`the inbox page needs the package ${name}, which is not installed`);
}

/** Every vendor module with the folder it is served from. */
export function vendorModules(): VendorModule[] {
  return PACKAGES.map(({ name, folder, specifiers }) => {
    const prefix = `/vendor/${name}/`;
    return {
      folder: path.join(packageFolder(name), folder),
      prefix,
      specifiers: Object.fromEntries(Object.entries(specifiers).map(([specifier, file]) => [specifier, `${prefix}${file}`])),
    };
  });
}

/** The page's import map, as the inline script it is (its hash goes into the content security policy). */
export function importMap(modules: VendorModule[]): string {
  const imports = Object.assign({}, ...modules.map((module) => module.specifiers)) as Record<string, string>;
  return JSON.stringify({ imports });
}
