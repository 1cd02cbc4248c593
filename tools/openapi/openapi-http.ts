import http from 'node:http';
import https from 'node:https';
import { TollgateError } from '../../common/tollgate-error';
import { AnswerLostError, NotSentError } from '../call-errors';

/**
 * One HTTP exchange of an OpenAPI tool, on Node's own client so that what is known of a failure is
 * exact: a request whose connection never opened was not sent (`NotSentError`); one that failed
 * once the connection was open may have reached the server (`AnswerLostError`).
 * Redirects are never followed (the answer is returned as it is), every request has its own
 * connection, and the body is read up to a byte cap and cut off past it.
 */

/**
 * A request Node's client refused to build (a header or a URL it cannot send): it threw before any
 * connection, so nothing was sent, and sending it again would fail the same way.
 */
export class UnbuiltRequestError extends TollgateError {
  static override readonly marker = 'tollgate.error.UnbuiltRequestError';
  override name = 'UnbuiltRequestError';
}

/** What is sent. */
export interface HttpRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: Buffer;
}

/** What came back, the body whole (within the cap). */
export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message;
}

/**
 * Sends one request and reads its answer. Rejects with {@link UnbuiltRequestError} when Node's
 * client refused to build it, with {@link NotSentError} when no connection
 * was made (refused, no such host, aborted before it connected), with {@link AnswerLostError}
 * when anything failed after it was (reset, aborted, an answer longer than `maxResponseBytes`).
 */
export function sendHttpRequest(
  request: HttpRequest,
  { signal, maxResponseBytes }: { signal: AbortSignal; maxResponseBytes: number },
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const where = `${request.method} ${request.url.origin}${request.url.pathname}`;
    if (signal.aborted) return reject(new NotSentError(`${where} was not sent: ${describe(signal.reason)}`));
    let connected = false;
    let settled = false;
    const fail = (error: unknown, what: string) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      outgoing.destroy();
      reject(
        connected
          ? new AnswerLostError(`${where} ${what}: ${describe(error)}`, { cause: error })
          : new NotSentError(`${where} was not sent: ${describe(error)}`, { cause: error }),
      );
    };
    const onAbort = () => fail(signal.reason, 'was cut off before its answer came');
    const client = request.url.protocol === 'https:' ? https : http;
    let outgoing: http.ClientRequest;
    try {
      outgoing = client.request(request.url, {
        method: request.method,
        headers: { ...request.headers, ...(request.body ? { 'content-length': String(request.body.length) } : {}) },
        // One connection per request: a connection that is open is this request's, so its failure is this request's.
        agent: false,
      });
    } catch (error) {
      // Thrown before any socket exists (an invalid header character, say): the request was never built, let alone sent.
      settled = true;
      return reject(new UnbuiltRequestError(`${where} could not be built, so it was not sent: ${describe(error)}`, { cause: error }));
    }
    outgoing.once('socket', (socket) => {
      if (!socket.connecting) connected = true;
      else socket.once('connect', () => (connected = true));
    });
    outgoing.once('error', (error) => fail(error, 'lost its connection'));
    outgoing.once('response', (incoming) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      incoming.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxResponseBytes) {
          // Settled first, so the close that follows is not taken for the cause.
          fail(new Error(`the answer passed maxResponseBytes (${maxResponseBytes} bytes)`), 'was answered at more length than allowed');
          incoming.destroy();
          return;
        }
        chunks.push(chunk);
      });
      incoming.once('error', (error) => fail(error, 'lost its answer midway'));
      incoming.once('aborted', () => fail(new Error('the connection closed mid-answer'), 'lost its answer midway'));
      incoming.once('end', () => {
        if (settled) return;
        if (!incoming.complete) return fail(new Error('the connection closed mid-answer'), 'lost its answer midway');
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: Buffer.concat(chunks) });
      });
    });
    signal.addEventListener('abort', onAbort, { once: true });
    outgoing.end(request.body);
  });
}

/** A `Retry-After` (seconds, or an HTTP date) in milliseconds from `now`, capped at `maxMs`; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, maxMs: number, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  let ms: number;
  if (/^\s*\d+\s*$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(ms, 0), maxMs);
}
