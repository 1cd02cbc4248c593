import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as the OTLP/JSON export carries it, its attributes flattened to plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
  serviceName?: string;
  /** The span's status as exported (code 2 = error), with its message. */
  status?: { code?: number; message?: string };
  /** The span's events (an exception recorded on it, say), their attributes flattened. */
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
}

type OtlpValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
};

function plain(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plain);
  return undefined;
}

function attributesOf(list: Array<{ key: string; value: OtlpValue }> | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plain(value)]));
}

/** A loopback OTLP/HTTP traces receiver (JSON encoding): it keeps every span it is sent and answers as a collector does. */
export async function startOtlpReceiver(): Promise<{
  url: string;
  spans: ReceivedSpan[];
  requests: () => number;
  close: () => Promise<void>;
}> {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests++;
      if (request.url !== '/v1/traces' || !String(request.headers['content-type']).includes('json')) {
        response.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const resourceSpans of body.resourceSpans ?? []) {
        const serviceName = attributesOf(resourceSpans.resource?.attributes)['service.name'] as string | undefined;
        for (const scopeSpans of resourceSpans.scopeSpans ?? [])
          for (const span of scopeSpans.spans ?? []) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
              name: span.name,
              attributes: attributesOf(span.attributes),
              serviceName,
              ...(span.status ? { status: span.status } : {}),
              events: (span.events ?? []).map((event: { name: string; attributes?: Array<{ key: string; value: OtlpValue }> }) => ({
                name: event.name,
                attributes: attributesOf(event.attributes),
              })),
            });
          }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  // Port 0: the system picks a free port as it binds, so no other process can take it in between.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
