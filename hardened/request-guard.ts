import type http from 'node:http';
import { TollgateError } from '../common/tollgate-error';

/** A request answered with a 4xx status and a one-line reason: thrown by a handler or the body reader, answered by the guard. */
export class RequestRefusal extends TollgateError {
  static override readonly marker = 'tollgate.error.RequestRefusal';
  override name = 'RequestRefusal';
  constructor(
    readonly status: 400 | 404 | 405 | 413 | 415,
    message: string,
    /** Headers the answer carries, e.g. `allow` for a 405. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** What the guard does with a request: the handler, and how to answer a refusal or a failure. */
export interface RequestGuardOptions {
  /** The server's name, for log lines. */
  name: string;
  /** Answers the request; may throw (or reject with) a {@link RequestRefusal}, or anything else. */
  handle: (request: http.IncomingMessage, response: http.ServerResponse) => void | Promise<void>;
  /** How a refusal's body is written: plain text by default, JSON for servers whose callers read JSON. */
  format?: 'text' | 'json';
  /** Where an unexpected failure is reported (its message only); the process's standard error by default. */
  log?: (line: string) => void;
}

function answerRefusal(response: http.ServerResponse, { status, message, headers }: RequestRefusal, format: 'text' | 'json'): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = format === 'json' ? JSON.stringify({ error: { message } }) : `${message}\n`;
  response.writeHead(status, {
    'content-type': format === 'json' ? 'application/json' : 'text/plain; charset=utf-8',
    // The rest of a refused request's body is not read: the connection ends with the answer.
    connection: 'close',
    ...headers,
  });
  response.end(body);
}

/**
 * A request listener that never lets one request end the process: a refusal thrown or rejected by
 * the handler is answered with its status and reason, any other failure with 500 (and a log line),
 * and errors of the request or response streams (a client that disconnects mid-body) are caught.
 */
export function requestGuard({
  name,
  handle,
  format = 'text',
  log = (line) => console.error(line),
}: RequestGuardOptions): http.RequestListener {
  return (request, response) => {
    request.on('error', () => undefined);
    response.on('error', () => undefined);
    const fail = (error: unknown) => {
      if (RequestRefusal.isInstance(error)) return answerRefusal(response, error, format);
      log(`${name}: request ${request.method} failed: ${error instanceof Error ? error.message : String(error)}`);
      if (response.headersSent) return response.destroy();
      response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('internal error\n');
    };
    try {
      const pending = handle(request, response);
      if (pending) pending.catch(fail);
    } catch (error) {
      fail(error);
    }
  };
}

/**
 * Gives a server the answers to requests Node's parser rejects (malformed request lines and
 * headers, headers too large): 400 or 431, then the connection ends; nothing is thrown.
 */
export function guardClientErrors(server: http.Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || (error.code === 'ECONNRESET' && socket.destroyed)) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  });
}

/**
 * A request's whole body, at most `maxBytes`: a `content-length` over the bound is refused before
 * a byte is read, and a body that grows past it while read is refused (413) without keeping more.
 */
export function readRequestBody(request: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    return Promise.reject(new RequestRefusal(413, `request body over ${maxBytes} bytes`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        request.removeAllListeners('data');
        request.pause();
        reject(new RequestRefusal(413, `request body over ${maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks, size)));
    request.on('error', (error) => reject(new RequestRefusal(400, `request body not received whole: ${error.message}`)));
    request.on('aborted', () => reject(new RequestRefusal(400, 'request body not received whole: the client went away')));
  });
}

/** A request body parsed as JSON, or a 400 naming what is wrong with it. */
export function parseJsonBody(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new RequestRefusal(400, `the body is not JSON: ${(error as Error).message}`);
  }
}

/** One percent-encoded path segment decoded, or a 400 naming it when its encoding is malformed. */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new RequestRefusal(400, `a path segment is not valid percent-encoding (${segment.length} characters)`);
  }
}
