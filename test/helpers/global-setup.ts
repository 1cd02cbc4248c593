import { DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { bundleTollgateWorkflows } from '../../worker/workflow-bundle';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Tollgate's workflows bundled once for the whole run (the plain variant); see `bundleWorkflows` in servers.ts. */
    workflowBundle: WorkflowBundleWithSourceMap;
  }
}

const shared = globalThis as { tollgateTestWorkflowBundle?: Promise<WorkflowBundleWithSourceMap> };

/**
 * Bundles the workflows once per run, before any file of the tiers that run workflows starts, and
 * hands the bundle to every file: bundling takes seconds, and every file would otherwise bundle the
 * same code again. The tiers share one bundle (the main process keeps it).
 */
export default async function setup(project: TestProject): Promise<void> {
  shared.tollgateTestWorkflowBundle ??= bundleTollgateWorkflows({ encrypted: false, traced: false }, new DefaultLogger('WARN'));
  project.provide('workflowBundle', await shared.tollgateTestWorkflowBundle);
}
