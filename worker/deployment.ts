import { createHash } from 'node:crypto';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { WorkerOptions } from '@temporalio/worker';
import type { TollgateConfig } from '../config/config-schema';

/** The workflow service calls a worker needs to make its own build current (a NativeConnection's or a Connection's). */
type WorkflowService = Pick<temporal.api.workflowservice.v1.WorkflowService, 'getClusterInfo' | 'setWorkerDeploymentCurrentVersion'>;

const GRPC = { notFound: 5, failedPrecondition: 9, unimplemented: 12, invalidArgument: 3 } as const;

/** The line webpack ends a bundle with: its inline source map, which names the folder the bundle was built in. */
const SOURCE_MAP_LINE = /^\/\/# sourceMappingURL=data:.*$/gm;

/**
 * The build id of a workflow bundle: a digest of its code, so the same workflow code is the same
 * build wherever it is installed (the inline source map, which names the install folder, is left out).
 */
export function buildIdOfBundle(code: string): string {
  return `wf-${createHash('sha256').update(code.replace(SOURCE_MAP_LINE, '')).digest('hex').slice(0, 20)}`;
}

/** The Worker Deployment a config's workers join: `temporal.deployment.name`, else the task queue's name made fit for one. */
export function deploymentNameOf(config: Pick<TollgateConfig, 'temporal'>): string {
  const { deployment, taskQueue } = config.temporal;
  if (deployment.name) return deployment.name;
  const fitted = taskQueue
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[.]/, '-')
    .slice(0, 255);
  return fitted;
}

/** The deployment version of a worker with this config and workflow bundle, or undefined when versioning is off. */
export function deploymentVersionOf(config: Pick<TollgateConfig, 'temporal'>, bundleCode: string): WorkerDeploymentVersion | undefined {
  if (!config.temporal.deployment.versioning) return undefined;
  return { deploymentName: deploymentNameOf(config), buildId: config.temporal.deployment.buildId ?? buildIdOfBundle(bundleCode) };
}

/**
 * The worker options that make a worker a version of its deployment: every workflow it starts is
 * pinned to this build (the workflows declare it too) and its activities run on this build's workers.
 */
export function deploymentOptionsFor(version: WorkerDeploymentVersion | undefined): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!version) return {};
  return { workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' } };
}

/** How `temporal worker deployment` names a version: `deployment:build`. */
export function versionLabel(version: WorkerDeploymentVersion): string {
  return `${version.deploymentName}:${version.buildId}`;
}

/** What became of a worker's own attempt to make its build current. */
export type MakeCurrentOutcome =
  { made: 'current' } | { made: 'not_asked'; why: string } | { made: 'unsupported'; why: string } | { made: 'failed'; why: string };

/**
 * Whether config `temporal.deployment.makeCurrent` asks this worker to make its build current as it
 * starts: `auto` does on a dev server (one that keeps its state in SQLite); the time-skipping test
 * server, which routes every task to any worker, has nothing to make current.
 */
export async function shouldMakeCurrent(
  config: Pick<TollgateConfig, 'temporal'>,
  service: WorkflowService,
): Promise<{ yes: boolean; why: string }> {
  const mode = config.temporal.deployment.makeCurrent;
  if (mode === 'manual') return { yes: false, why: 'temporal.deployment.makeCurrent is "manual"' };
  if (mode === 'on-start') return { yes: true, why: 'temporal.deployment.makeCurrent is "on-start"' };
  try {
    const info = await service.getClusterInfo({});
    if (info.persistenceStore === 'sqlite') return { yes: true, why: 'a dev server (SQLite persistence) makes each new build current' };
    return {
      yes: false,
      why: `the server keeps its state in ${info.persistenceStore || 'an unnamed store'}, not a dev server's SQLite: promote the build with \`tollgate deploy promote\``,
    };
  } catch (error) {
    if ((error as { code?: number }).code === GRPC.unimplemented) return { yes: false, why: 'the server has no worker deployments' };
    throw error;
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * Makes `version` the current version of its deployment, once the server has seen this worker poll
 * (until then it answers that the deployment or version is unknown, which is waited out up to
 * `timeoutMs`). Any other refusal, such as a task queue the current version polls and this build
 * does not, is returned as it is: the build then stays where it was, and the turns keep their builds.
 */
export async function makeCurrent(
  service: WorkflowService,
  namespace: string,
  version: WorkerDeploymentVersion,
  { timeoutMs = 30_000, signal, identity }: { timeoutMs?: number; signal?: AbortSignal; identity?: string } = {},
): Promise<MakeCurrentOutcome> {
  const deadline = Date.now() + timeoutMs;
  for (let wait = 100; ; wait = Math.min(wait * 2, 1_000)) {
    try {
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        identity,
      });
      return { made: 'current' };
    } catch (error) {
      const { code, message } = error as { code?: number; message?: string };
      if (code === GRPC.unimplemented) return { made: 'unsupported', why: 'the server has no worker deployments' };
      const notSeenYet = code === GRPC.notFound || (code === GRPC.failedPrecondition && /poller/i.test(message ?? ''));
      if (!notSeenYet || Date.now() >= deadline || signal?.aborted) return { made: 'failed', why: String(message ?? error) };
    }
    await sleep(wait, signal);
    if (signal?.aborted) return { made: 'failed', why: 'the worker stopped first' };
  }
}
