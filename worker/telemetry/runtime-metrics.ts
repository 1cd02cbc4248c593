import { Runtime, type RuntimeOptions } from '@temporalio/worker';
import type { TollgateConfig } from '../../config/config-schema';
import { freePort } from '../../connection/ports';

/**
 * Installs the process's Temporal runtime with its Prometheus exporter on a loopback port of its
 * own, when config `telemetry.prometheus` is set, and returns that endpoint's URL for the
 * worker's `/metrics` to merge. The runtime can be installed once per process, before any
 * connection: call this first (`options` are the runtime's others, its logger say). Returns undefined when metrics are off.
 */
export async function installRuntimeMetrics(
  config: TollgateConfig,
  options: Omit<RuntimeOptions, 'telemetryOptions'> = {},
): Promise<string | undefined> {
  if (!config.telemetry.prometheus) return undefined;
  const port = await freePort('127.0.0.1');
  try {
    Runtime.install({ ...options, telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${port}` } } } });
  } catch (error) {
    throw new Error(
      'telemetry.prometheus: the Temporal runtime of this process was installed before, without its metrics exporter ' +
        `(${(error as Error).message}); call installRuntimeMetrics before creating any connection or worker`,
      { cause: error },
    );
  }
  return `http://127.0.0.1:${port}/metrics`;
}
