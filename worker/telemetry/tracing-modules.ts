// Kept apart from tracing.ts, so that bundling workflows does not load the OpenTelemetry SDK.

/**
 * The workflow interceptor modules of Temporal's OpenTelemetry plugin (the module its plugin adds,
 * the one that exports `interceptors`): a worker given a prebuilt `workflowBundle` traces its
 * workflows only when the bundle was built with them
 * (`bundleWorkflowCode({ workflowInterceptorModules: TRACING_WORKFLOW_MODULES })`).
 */
export const TRACING_WORKFLOW_MODULES = [require.resolve('@temporalio/interceptors-opentelemetry-v2/lib/workflow-interceptors')];
