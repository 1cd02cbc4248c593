import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/load-config';
import TIERS from '../helpers/tiers.json';

/** Every `*.test.ts` under `folder`, relative to the project root. */
function testFiles(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(PROJECT_ROOT, folder), { withFileTypes: true })) {
    const relative = `${folder}/${entry.name}`;
    if (entry.isDirectory() && entry.name !== 'node_modules') found.push(...testFiles(relative));
    else if (entry.isFile() && entry.name.endsWith('.test.ts')) found.push(relative);
  }
  return found;
}

/** The tiers are vitest projects (vitest.config.mts) over these folders. */
describe('the test layout', () => {
  it('puts every test file in the folder of exactly one tier, so that `npm test` runs it', () => {
    const folders = Object.values(TIERS).flat();
    const outside = [...testFiles('test'), ...testFiles('examples')].filter(
      (file) => folders.filter((folder) => file.startsWith(`${folder}/`)).length !== 1,
    );
    expect(outside).toEqual([]);
  });
});
