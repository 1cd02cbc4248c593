// Where a command finds its config and keeps its state: TOLLGATE_CONFIG, else the config file from
// the working directory up to the nearest package.json, never inside node_modules; without one, the
// defaults with .tollgate/ in the project.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, findProject, loadConfig, PACKAGE_ROOT } from '../../config/load-config';
import { binaryFolders, BINARY_FOLDER } from '../../server/temporal-binaries';

/** A folder tree in the OS temp dir: `files` maps relative paths to their text. */
function tree(files: Record<string, string>): string {
  const top = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'tollgate-find-project-')));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(top, file)), { recursive: true });
    writeFileSync(path.join(top, file), text);
  }
  return top;
}

const PACKAGE_JSON = '{"name":"app","version":"1.0.0"}';

describe('findProject', () => {
  it('reads tollgate.config.yaml of the project from a folder below it', () => {
    const top = tree({
      'app/package.json': PACKAGE_JSON,
      'app/tollgate.config.yaml': 'temporal:\n  address: 127.0.0.1:37233\n',
      'app/src/deep/x': '',
    });
    const found = findProject({ cwd: path.join(top, 'app', 'src', 'deep'), env: {} });
    expect(found).toEqual({ root: path.join(top, 'app'), configFile: path.join(top, 'app', 'tollgate.config.yaml'), foundBy: 'search' });
    const config = loadConfig({ cwd: path.join(top, 'app', 'src', 'deep'), env: {} });
    expect(config.temporal.address).toBe('127.0.0.1:37233');
    expect(config.configFile).toBe(path.join(top, 'app', 'tollgate.config.yaml'));
    expect(config.store.sqliteFile).toBe(path.join(top, 'app', '.tollgate', 'state', 'idempotency.db'));
    expect(config.temporal.devServer.dbFile).toBe(path.join(top, 'app', '.tollgate', 'state', 'temporal.db'));
  });

  it('takes the nearer of two config files, and temporal.config.yaml as well', () => {
    const top = tree({
      'app/package.json': PACKAGE_JSON,
      'app/tollgate.config.yaml': '',
      'app/agents/temporal.config.yaml': 'temporal:\n  taskQueue: agents\n',
    });
    const config = loadConfig({ cwd: path.join(top, 'app', 'agents'), env: {} });
    expect(config.temporal.taskQueue).toBe('agents');
    expect(config.projectRoot).toBe(path.join(top, 'app'));
  });

  it('stops at the nearest package.json: a config file above the project is not read', () => {
    const top = tree({ 'tollgate.config.yaml': 'temporal:\n  address: 127.0.0.1:1\n', 'app/package.json': PACKAGE_JSON });
    const app = path.join(top, 'app');
    expect(findProject({ cwd: app, env: {} })).toEqual({ root: app, foundBy: 'none' });
    const config = loadConfig({ cwd: app, env: { TEMPORAL_ADDRESS: '127.0.0.1:7233' } });
    expect(config.configFile).toBeUndefined();
    expect(config.temporal.address).toBe('127.0.0.1:7233');
    // The defaults, with the project as the base of every relative path.
    expect(config.store.sqliteFile).toBe(path.join(app, '.tollgate', 'state', 'idempotency.db'));
    expect(config.workspace).toBe(path.join(app, '.tollgate', 'workspace'));
    expect(config.inbox.passkeysFile).toBe(path.join(app, '.tollgate', 'state', 'inbox-passkeys.json'));
    // The package's own example corpus, found in the package.
    expect(config.corpus).toBe(path.join(PACKAGE_ROOT, 'examples', 'corpus'));
  });

  it('never reads a config file or keeps state inside node_modules', () => {
    const top = tree({
      'app/package.json': PACKAGE_JSON,
      'app/node_modules/tollgate/package.json': '{"name":"tollgate"}',
      'app/node_modules/tollgate/temporal.config.yaml': 'temporal:\n  address: 127.0.0.1:2\n',
    });
    const inside = path.join(top, 'app', 'node_modules', 'tollgate');
    expect(findProject({ cwd: inside, env: {} })).toEqual({ root: path.join(top, 'app'), foundBy: 'none' });
    const config = loadConfig({ cwd: inside, env: {} });
    expect(config.store.sqliteFile).toBe(path.join(top, 'app', '.tollgate', 'state', 'idempotency.db'));
    expect(binaryFolders(inside)[0]).toBe(path.join(top, 'app', '.tollgate', 'bin'));
  });

  it('reads the file TOLLGATE_CONFIG names (relative to the working directory), and says when it is missing', () => {
    const top = tree({
      'app/package.json': PACKAGE_JSON,
      'app/tollgate.config.yaml': '',
      'shared/prod.yaml': 'temporal:\n  namespace: prod\n',
    });
    const app = path.join(top, 'app');
    const config = loadConfig({ cwd: app, env: { TOLLGATE_CONFIG: '../shared/prod.yaml' } });
    expect(config.temporal.namespace).toBe('prod');
    // Relative paths of that file are read from its own folder; the project is still where the command runs.
    expect(config.store.sqliteFile).toBe(path.join(top, 'shared', '.tollgate', 'state', 'idempotency.db'));
    expect(config.projectRoot).toBe(app);
    expect(() => loadConfig({ cwd: app, env: { TOLLGATE_CONFIG: 'nope.yaml' } })).toThrow(
      `${path.join(app, 'nope.yaml')}: config file not found (named by TOLLGATE_CONFIG)`,
    );
  });

  it('refuses a folder holding both names, naming both', () => {
    const top = tree({ 'package.json': PACKAGE_JSON, 'tollgate.config.yaml': '', 'temporal.config.yaml': '' });
    expect(() => findProject({ cwd: top, env: {} })).toThrow(ConfigError);
    expect(() => findProject({ cwd: top, env: {} })).toThrow(`${top} holds both tollgate.config.yaml and temporal.config.yaml`);
  });

  it('names the config file in a bad key', () => {
    const top = tree({ 'package.json': PACKAGE_JSON, 'tollgate.config.yaml': 'temporal:\n  adress: x\n' });
    expect(() => loadConfig({ cwd: top, env: {} })).toThrow(`${path.join(top, 'tollgate.config.yaml')}: unknown key "temporal.adress"`);
  });

  it('without a package.json anywhere, the working directory is the project', () => {
    const top = tree({ 'work/x': '' });
    const work = path.join(top, 'work');
    expect(findProject({ cwd: work, env: {} })).toEqual({ root: work, foundBy: 'none' });
  });

  it('in the repository itself, finds its temporal.config.yaml and its own binaries', () => {
    expect(findProject({ cwd: path.join(PACKAGE_ROOT, 'docs'), env: {} }).configFile).toBe(path.join(PACKAGE_ROOT, 'temporal.config.yaml'));
    expect(binaryFolders(PACKAGE_ROOT)).toEqual([BINARY_FOLDER]);
  });
});
