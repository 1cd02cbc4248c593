// The servers and bundles of Tollgate's own tests come from the testing kit.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { inject } from 'vitest';
import { bundleWorkflows as bundleWorkflowsNow } from '../../testing/servers';

export { quietRuntime, startTimeSkippingServer } from '../../testing/servers';

/**
 * The workflows for a test file: the plain bundle the run made once (global-setup.ts), or, with
 * `encrypted` or where the run made none, bundled now.
 */
export async function bundleWorkflows({ encrypted = false }: { encrypted?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  const shared = encrypted ? undefined : inject('workflowBundle');
  return shared ?? bundleWorkflowsNow({ encrypted });
}
