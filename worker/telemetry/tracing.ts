import path from 'node:path';
import type { Tracer } from '@opentelemetry/api';
import type { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry-v2';
import type { TollgateConfig } from '../../config/config-schema';
import { installContextManager } from './context-manager';

export { TRACING_WORKFLOW_MODULES } from './tracing-modules';

/** The package Temporal's OpenTelemetry plugin comes in (for the OpenTelemetry JS 2.x SDK). */
const PLUGIN_PACKAGE = '@temporalio/interceptors-opentelemetry-v2';

/**
 * The Temporal packages the plugin would load from another copy than Tollgate's own. Its 1.23.0
 * asks for `@temporalio/common` and `@temporalio/workflow` 1.23.0 exactly; Tollgate's
 * `package.json` overrides them to its 1.24.0, but npm applies overrides only from the root
 * project, so a project that installs Tollgate needs the same `overrides` (else the workflow
 * bundle would hold two `@temporalio/workflow`).
 */
export function duplicatedTemporalPackages(): string[] {
  const pluginFolder = path.dirname(require.resolve(`${PLUGIN_PACKAGE}/package.json`));
  const resolvedFrom = (name: string, folder?: string) => {
    try {
      return require.resolve(name, folder ? { paths: [folder] } : undefined);
    } catch {
      return undefined;
    }
  };
  return ['@temporalio/workflow', '@temporalio/common'].filter((name) => resolvedFrom(name, pluginFolder) !== resolvedFrom(name));
}

/** A worker's tracing: Temporal's OpenTelemetry plugin (its interceptors and the workflow spans' sink) and Tollgate's tracer. */
export interface Tracing {
  plugin: OpenTelemetryPlugin;
  tracer: Tracer;
  /** Exports what is still buffered and stops the exporter. */
  shutdown(): Promise<void>;
}

/**
 * Tracing as config `telemetry.otlp` says (undefined when it is unset): spans go in batches to the
 * OTLP/HTTP endpoint as JSON. Workflow spans, Temporal's and Tollgate's `invoke_agent` and
 * `execute_tool`, reach the same processor through the plugin's sink, which the worker does not
 * call while replaying, so a replayed history exports no span a second time.
 */
export function createTracing(config: TollgateConfig): Tracing | undefined {
  const otlp = config.telemetry.otlp;
  if (!otlp) return undefined;
  const duplicated = duplicatedTemporalPackages();
  if (duplicated.length > 0) {
    throw new Error(
      `telemetry.otlp: ${PLUGIN_PACKAGE} does not load Tollgate's ${duplicated.join(' and ')}; add Tollgate's "overrides" ` +
        `for ${PLUGIN_PACKAGE} to your project's package.json and install again`,
    );
  }
  installContextManager();
  // The SDK, the exporter and the plugin load here, for a worker that traces: every other worker starts without them.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { BasicTracerProvider, BatchSpanProcessor } =
    require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { ATTR_SERVICE_NAME } = require('@opentelemetry/semantic-conventions') as typeof import('@opentelemetry/semantic-conventions');
  const { OpenTelemetryPlugin: Plugin } = require(PLUGIN_PACKAGE) as typeof import('@temporalio/interceptors-opentelemetry-v2');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: otlp.serviceName });
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: otlp.endpoint, headers: otlp.headers }), {
    scheduledDelayMillis: 1_000,
  });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const tracer = provider.getTracer('tollgate');
  return {
    plugin: new Plugin({ resource, spanProcessor: processor, tracer }),
    tracer,
    shutdown: () => provider.shutdown(),
  };
}
