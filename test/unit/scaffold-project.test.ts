// `tollgate init`'s files: what it writes in an empty folder, and that it overwrites nothing.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_SCRIPTS, scaffoldProject, ScaffoldConflictError } from '../../client/init/scaffold-project';

const folder = () => mkdtempSync(path.join(os.tmpdir(), 'tollgate-init-'));

/** Every file under `root`, relative, sorted. */
function listing(root: string, prefix = ''): string[] {
  return readdirSync(path.join(root, prefix), { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? listing(root, path.join(prefix, entry.name)) : [path.join(prefix, entry.name)]))
    .sort();
}

describe('scaffoldProject', () => {
  it('writes the project into an empty folder, with package.json scripts and .tollgate/ ignored', () => {
    const project = folder();
    const report = scaffoldProject(project);
    expect(listing(project)).toEqual(
      [
        '.gitignore',
        'package.json',
        'src/agent.mts',
        'src/tools.mts',
        'src/turn.mts',
        'src/worker.mts',
        'test/support.test.mts',
        'tollgate.config.yaml',
      ].sort(),
    );
    expect(report.written.sort()).toEqual(listing(project));
    expect(report.missingDependencies).toEqual(['tollgate', 'ai', 'zod']);
    const packageJson = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8'));
    expect(packageJson.scripts).toEqual(PROJECT_SCRIPTS);
    expect(readFileSync(path.join(project, '.gitignore'), 'utf8').split('\n')).toContain('.tollgate/');
    expect(readFileSync(path.join(project, 'src', 'agent.mts'), 'utf8')).toContain("defineAgent({\n  name: 'support'");
  });

  it("keeps a project's package.json and .gitignore, adding its scripts and one line, and replaces npm init's placeholder test", () => {
    const project = folder();
    const mine = {
      name: 'shop',
      version: '2.0.0',
      scripts: { build: 'tsc', test: 'echo "Error: no test specified" && exit 1' },
      dependencies: { zod: '4.0.0' },
    };
    writeFileSync(path.join(project, 'package.json'), JSON.stringify(mine));
    writeFileSync(path.join(project, '.gitignore'), 'dist');
    const report = scaffoldProject(project);
    expect(report.updated.sort()).toEqual(['.gitignore', 'package.json']);
    expect(report.missingDependencies).toEqual(['tollgate', 'ai']);
    const packageJson = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8'));
    expect(packageJson).toMatchObject({
      name: 'shop',
      version: '2.0.0',
      dependencies: { zod: '4.0.0' },
      scripts: { build: 'tsc', ...PROJECT_SCRIPTS },
    });
    expect(readFileSync(path.join(project, '.gitignore'), 'utf8')).toBe('dist\n.tollgate/\n');
  });

  it('overwrites nothing: names every file and script in the way and writes nothing', () => {
    const project = folder();
    mkdirSync(path.join(project, 'src'));
    writeFileSync(path.join(project, 'src', 'agent.mts'), 'mine');
    writeFileSync(path.join(project, 'tollgate.config.yaml'), 'mine');
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ scripts: { turn: 'node mine.js' } }));
    const attempt = () => scaffoldProject(project);
    expect(attempt).toThrow(ScaffoldConflictError);
    expect(attempt).toThrow(
      'src/agent.mts exists, tollgate.config.yaml exists, package.json has a "turn" script; tollgate init overwrites nothing, so it wrote nothing',
    );
    expect(listing(project)).toEqual(['package.json', 'src/agent.mts', 'tollgate.config.yaml']);
    expect(readFileSync(path.join(project, 'src', 'agent.mts'), 'utf8')).toBe('mine');
    expect(existsSync(path.join(project, '.gitignore'))).toBe(false);
  });

  it('names a package.json that is not JSON', () => {
    const project = folder();
    writeFileSync(path.join(project, 'package.json'), '{ nope');
    expect(() => scaffoldProject(project)).toThrow(/^package\.json is not valid JSON \(.*\); fix it, then run tollgate init again$/);
  });
});
