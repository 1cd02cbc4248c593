import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { guardClientErrors, RequestRefusal, requestGuard } from '../../hardened/request-guard';

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** The URL Prometheus scrapes. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (another path is 404, another method 405, a malformed request 400, never
 * a crash): Tollgate's registry, followed by the Temporal runtime's own metrics when
 * `coreMetricsUrl` names the loopback endpoint the runtime's exporter listens on, so Prometheus
 * scrapes one endpoint per worker. A runtime endpoint that does not answer leaves its part out
 * (and says so in a comment line) rather than failing the scrape.
 */
export async function startMetricsServer({
  host,
  port,
  registry,
  coreMetricsUrl,
}: {
  host: string;
  port: number;
  registry: Registry;
  coreMetricsUrl?: string;
}): Promise<MetricsServer> {
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if ((request.url ?? '').split('?')[0] !== '/metrics') throw new RequestRefusal(404, 'only GET /metrics is served here');
    if (request.method !== 'GET' && request.method !== 'HEAD') throw new RequestRefusal(405, '/metrics takes GET', { allow: 'GET, HEAD' });
    let text: string;
    try {
      text = await exposition(registry, coreMetricsUrl);
    } catch (error) {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics: ${String(error)}\n`);
      return;
    }
    response.writeHead(200, { 'content-type': registry.contentType }).end(request.method === 'HEAD' ? undefined : text);
  };
  const server = createServer(requestGuard({ name: 'metrics endpoint', handle }));
  guardClientErrors(server);
  await listen(server, host, port);
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function exposition(registry: Registry, coreMetricsUrl: string | undefined): Promise<string> {
  const own = await registry.metrics();
  if (!coreMetricsUrl) return own;
  try {
    const response = await fetch(coreMetricsUrl, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return `${own.endsWith('\n') ? own : `${own}\n`}${await response.text()}`;
  } catch (error) {
    return `${own}\n# Temporal runtime metrics unavailable from ${coreMetricsUrl}: ${(error as Error).message}\n`;
  }
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new Error(`telemetry.prometheus: cannot listen on ${host}:${port} (${error.code ?? error.message})`)),
    );
    server.listen(port, host, () => resolve());
  });
}
