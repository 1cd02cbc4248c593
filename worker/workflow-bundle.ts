import { existsSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type Logger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { ENCRYPTED_CONVERTER_PATHS } from '../codec/aes-gcm-codec';
import { TRACING_WORKFLOW_MODULES } from './telemetry/tracing-modules';

/** The file webpack bundles Tollgate's workflows from: the TypeScript source, or its JavaScript when Tollgate runs built. */
export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', `tollgate-workflows${path.extname(__filename)}`);

/** The entry of a bundle holding a worker's own workflows beside Tollgate's (`TollgatePlugin`). */
export const BESIDE_YOUR_WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', `beside-your-workflows${path.extname(__filename)}`);

/** The module name that entry imports your workflows by; the plugin points it at your `workflowsPath`. */
export const YOUR_WORKFLOWS_MODULE = '__tollgate_your_workflows__';

/** What a worker's workflow bundle holds besides the workflows: the converters of an encrypting worker, the tracing interceptors. */
export interface BundleVariant {
  encrypted: boolean;
  traced: boolean;
}

/** Every variant, as `npm run build` prebuilds them. */
export const BUNDLE_VARIANTS: BundleVariant[] = [
  { encrypted: false, traced: false },
  { encrypted: true, traced: false },
  { encrypted: false, traced: true },
  { encrypted: true, traced: true },
];

/** The folder the build writes the prebuilt bundles to (`dist/workflow-bundles`). */
export const PREBUILT_BUNDLE_FOLDER = path.join(__dirname, '..', 'workflow-bundles');

/** A variant's file name: `plain.js`, `encrypted.js`, `traced.js`, `encrypted-traced.js`. */
export function variantFile({ encrypted, traced }: BundleVariant): string {
  return `${[encrypted ? 'encrypted' : '', traced ? 'traced' : ''].filter(Boolean).join('-') || 'plain'}.js`;
}

/**
 * The bundle `npm run build` made for this variant, when Tollgate runs built and the build wrote
 * it; undefined when it runs from its TypeScript sources (which are bundled as a worker starts).
 */
export function prebuiltBundlePath(variant: BundleVariant): string | undefined {
  if (path.extname(__filename) !== '.js') return undefined;
  const file = path.join(PREBUILT_BUNDLE_FOLDER, variantFile(variant));
  return existsSync(file) ? file : undefined;
}

/**
 * Bundles Tollgate's workflows for a variant: the prebuilt bundles and the one a worker builds
 * as it starts from source come from these same options.
 */
export async function bundleTollgateWorkflows(variant: BundleVariant, logger?: Logger): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    ...(variant.encrypted ? ENCRYPTED_CONVERTER_PATHS : {}),
    workflowInterceptorModules: variant.traced ? TRACING_WORKFLOW_MODULES : [],
    ...(logger ? { logger } : {}),
  });
}

/**
 * Tollgate's workflows for a variant: the prebuilt bundle when there is one (read by the worker
 * from its path), else bundled now.
 */
export async function tollgateWorkflowBundle(variant: BundleVariant, logger?: Logger): Promise<{ code: string } | { codePath: string }> {
  const prebuilt = prebuiltBundlePath(variant);
  return prebuilt ? { codePath: prebuilt } : bundleTollgateWorkflows(variant, logger);
}
