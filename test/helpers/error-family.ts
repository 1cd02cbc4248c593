import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { TollgateError } from '../../common/tollgate-error';

const ROOT = path.join(__dirname, '..', '..');

/** Folders that are not the package's source (besides those git ignores, such as a test's copy of workflows/). */
const NOT_SOURCE = new Set(['node_modules', 'dist', 'test', 'docs', 'coverage', 'test-output']);

/** Whether git ignores a top-level entry: the build output, the dependencies, what a run writes. */
function ignoredByGit(name: string): boolean {
  return readFileSync(path.join(ROOT, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim().replace(/^\/|\/$/g, ''))
    .filter((pattern) => pattern && !pattern.startsWith('#') && !pattern.includes('/'))
    .some((pattern) => (pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern));
}

/** A class of the error family as its source declares it. */
export interface FamilyClass {
  name: string;
  /** Its file, relative to the project root with `/` separators. */
  file: string;
  /** The marker it declares (`static override readonly marker = '…'`), or undefined when it declares none. */
  marker: string | undefined;
}

/** A class of the family with its constructor, loaded from this copy of the sources. */
export type LoadedFamilyClass = FamilyClass & { type: typeof TollgateError & (new (...args: never[]) => TollgateError) };

/** Every TypeScript source file of the package, relative to the project root. */
export function packageSourceFiles(): string[] {
  // Folder by folder, so that node_modules is never walked.
  const top = readdirSync(ROOT, { withFileTypes: true }).filter(
    (entry) => !NOT_SOURCE.has(entry.name) && !entry.name.startsWith('.') && !ignoredByGit(entry.name),
  );
  return top
    .flatMap((entry) =>
      entry.isDirectory() ? readdirSync(path.join(ROOT, entry.name), { withFileTypes: true, recursive: true }) : [entry],
    )
    .filter((entry) => entry.isFile() && /\.(ts|mts|cts)$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .filter((file) => !file.split('/').some((part) => NOT_SOURCE.has(part) || part.startsWith('.')));
}

/** Every class declared in the package's sources, with the class it extends. */
export function declaredClasses(): (FamilyClass & { base: string })[] {
  return packageSourceFiles().flatMap((file) => {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    return [...text.matchAll(/class (\w+) extends (\w+)\b[^{\n]*\{(.*\n(?:.*\n){0,3})/g)].map((match) => ({
      name: match[1],
      base: match[2],
      file,
      marker: /static override readonly marker = '([^']*)';/.exec(match[3])?.[1],
    }));
  });
}

/** The classes that extend TollgateError, directly or through another of the family, read from the source text. */
export function familyClasses(): FamilyClass[] {
  const declared = declaredClasses();
  const family = new Map<string, FamilyClass>();
  for (let grew = true; grew;) {
    grew = false;
    for (const { base, ...entry } of declared) {
      if (!family.has(entry.name) && (base === 'TollgateError' || family.has(base))) {
        family.set(entry.name, entry);
        grew = true;
      }
    }
  }
  return [...family.values()];
}

/** The family's classes with their constructors from this copy. */
export async function loadFamilyClasses(): Promise<LoadedFamilyClass[]> {
  return Promise.all(
    familyClasses().map(async (entry) => {
      const module = (await import(path.join(ROOT, entry.file))) as Record<string, LoadedFamilyClass['type']>;
      return { ...entry, type: module[entry.name] };
    }),
  );
}
