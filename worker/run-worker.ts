import type { TollgateConfig } from '../config/config-schema';
import { probeServer } from '../connection/temporal-connection';
import { createWorker } from './create-worker';
import { installRuntimeMetrics } from './telemetry/runtime-metrics';

/** Runs a worker against the configured server until SIGINT or SIGTERM; the worker closes its connection and store when it stops. */
export async function runWorker(config: TollgateConfig): Promise<void> {
  const { address, namespace, taskQueue } = config.temporal;
  // Before anything else touches the runtime: it is installed once per process.
  const coreMetricsUrl = await installRuntimeMetrics(config);
  if ((await probeServer(address, config.temporalProfile)) !== 'temporal') {
    throw new Error(
      `no Temporal server answers at ${address}; start one with \`npm run server\` (or \`tollgate server start\`) or set TEMPORAL_ADDRESS`,
    );
  }
  const worker = await createWorker({ config, coreMetricsUrl });
  console.log(`Tollgate worker: task queue ${taskQueue} on ${address} (namespace ${namespace}); Ctrl-C stops it.`);
  if (worker.metricsUrl) console.log(`Metrics: ${worker.metricsUrl} (Tollgate's and the Temporal runtime's)`);
  if (config.telemetry.otlp) console.log(`Traces: OTLP/HTTP to ${config.telemetry.otlp.endpoint}`);
  const code = worker.workflowCode;
  console.log(`Workflows: ${code.from === 'prebuilt' ? `the bundle prebuilt at ${code.path}` : code.from}`);
  await worker.run();
}
