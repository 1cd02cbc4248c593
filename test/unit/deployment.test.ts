import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config/load-config';
import {
  buildIdOfBundle,
  deploymentNameOf,
  deploymentOptionsFor,
  deploymentVersionOf,
  makeCurrent,
  shouldMakeCurrent,
} from '../../worker/deployment';

function configFile(text: string): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-deployment-')), 'temporal.config.yaml');
  writeFileSync(file, text);
  return file;
}

/** A server's answer with a gRPC status code, as the SDK's connections throw them. */
function grpcError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code });
}

const code = `function agentTurn() { return 1; }\n`;
const mapped = (folder: string) => `${code}//# sourceMappingURL=data:application/json;base64,${Buffer.from(folder).toString('base64')}\n`;

describe('the build id of a workflow bundle', () => {
  it('is the same for the same code built in two folders, and differs when one character of the code does', () => {
    const here = buildIdOfBundle(mapped('/srv/release-a/workflows'));
    expect(here).toMatch(/^wf-[0-9a-f]{20}$/);
    expect(buildIdOfBundle(mapped('/home/someone/checkout/workflows'))).toBe(here);
    expect(buildIdOfBundle(mapped('/srv/release-a/workflows').replace('return 1', 'return 2'))).not.toBe(here);
  });
});

describe('config temporal.deployment', () => {
  it('defaults to a versioned worker of the deployment named after the task queue, made current on a dev server', () => {
    const config = loadConfig({ file: configFile('temporal: { taskQueue: agents/eu }\n'), env: {} });
    expect(config.temporal.deployment).toEqual({ versioning: true, makeCurrent: 'auto' });
    expect(deploymentNameOf(config)).toBe('agents-eu');
    const version = deploymentVersionOf(config, code);
    expect(version).toEqual({ deploymentName: 'agents-eu', buildId: buildIdOfBundle(code) });
    expect(deploymentOptionsFor(version)).toEqual({
      workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' },
    });
  });

  it('takes a name and build id from the file, the build id from TOLLGATE_BUILD_ID over it, and no version when versioning is off', () => {
    const file = configFile('temporal: { deployment: { name: agents, buildId: "2026-12-02.1" } }\n');
    expect(deploymentVersionOf(loadConfig({ file, env: {} }), code)).toEqual({ deploymentName: 'agents', buildId: '2026-12-02.1' });
    const overridden = loadConfig({ file, env: { TOLLGATE_BUILD_ID: 'release-7' } });
    expect(deploymentVersionOf(overridden, code)).toEqual({ deploymentName: 'agents', buildId: 'release-7' });
    const off = loadConfig({ file: configFile('temporal: { deployment: { versioning: false } }\n'), env: {} });
    expect([deploymentVersionOf(off, code), deploymentOptionsFor(undefined)]).toEqual([undefined, {}]);
  });

  it('refuses a build id or mode that cannot be used, naming the key or the variable', () => {
    const load =
      (text: string, env: NodeJS.ProcessEnv = {}) =>
      () =>
        loadConfig({ file: configFile(text), env });
    expect(load('temporal: { deployment: { buildId: "a b" } }\n')).toThrow(ConfigError);
    expect(load('temporal: { deployment: { buildId: "a b" } }\n')).toThrow(/temporal\.deployment\.buildId/);
    expect(load('temporal: { deployment: { makeCurrent: always } }\n')).toThrow(
      /temporal\.deployment\.makeCurrent: expected "auto", "on-start" or "manual"/,
    );
    expect(load('temporal: { deployment: { ramp: 10 } }\n')).toThrow(/temporal\.deployment/);
    expect(load('', { TOLLGATE_BUILD_ID: 'x'.repeat(300) })).toThrow(/^TOLLGATE_BUILD_ID: /);
  });
});

describe('making a build current as a worker starts', () => {
  const version = { deploymentName: 'tollgate', buildId: 'wf-1' };
  const config = (makeCurrentMode: 'auto' | 'on-start' | 'manual') => ({
    temporal: loadConfig({ file: configFile(`temporal: { deployment: { makeCurrent: ${makeCurrentMode} } }\n`), env: {} }).temporal,
  });
  const service = (store: string | Error, answers: Array<Error | undefined> = []) => {
    const calls: string[] = [];
    return {
      calls,
      getClusterInfo: async () => {
        if (store instanceof Error) throw store;
        return { persistenceStore: store };
      },
      setWorkerDeploymentCurrentVersion: async ({ buildId }: { buildId?: string | null }) => {
        calls.push(String(buildId));
        const answer = answers.shift();
        if (answer) throw answer;
        return {};
      },
    } as never as Parameters<typeof makeCurrent>[0] & { calls: string[] };
  };

  it('asks on a dev server (SQLite), leaves promotion to a person on another store, and follows the config otherwise', async () => {
    expect(await shouldMakeCurrent(config('auto'), service('sqlite'))).toMatchObject({ yes: true });
    expect(await shouldMakeCurrent(config('auto'), service('postgres'))).toMatchObject({
      yes: false,
      why: expect.stringContaining('tollgate deploy promote'),
    });
    expect(await shouldMakeCurrent(config('auto'), service(grpcError(12, 'unimplemented')))).toMatchObject({ yes: false });
    expect(await shouldMakeCurrent(config('on-start'), service('postgres'))).toMatchObject({ yes: true });
    expect(await shouldMakeCurrent(config('manual'), service('sqlite'))).toMatchObject({ yes: false });
    await expect(shouldMakeCurrent(config('auto'), service(grpcError(14, 'unavailable')))).rejects.toThrow('unavailable');
  });

  it('waits out a server that has not seen the build poll yet, and returns any other refusal as it is', async () => {
    const late = service('sqlite', [grpcError(5, 'deployment not found'), grpcError(9, 'no pollers seen'), undefined]);
    expect(await makeCurrent(late, 'default', version, { timeoutMs: 5_000 })).toEqual({ made: 'current' });
    expect(late.calls).toEqual(['wf-1', 'wf-1', 'wf-1']);
    const refused = service('sqlite', [grpcError(9, 'the current version polls task queue x; this one does not')]);
    expect(await makeCurrent(refused, 'default', version)).toEqual({
      made: 'failed',
      why: 'the current version polls task queue x; this one does not',
    });
    expect(refused.calls).toHaveLength(1);
    expect(await makeCurrent(service('sqlite', [grpcError(12, 'unimplemented')]), 'default', version)).toMatchObject({
      made: 'unsupported',
    });
    const never = service(
      'sqlite',
      Array.from({ length: 100 }, () => grpcError(5, 'not found')),
    );
    expect(await makeCurrent(never, 'default', version, { timeoutMs: 300 })).toEqual({ made: 'failed', why: 'not found' });
  });
});
