/**
 * Byte caps on what comes in over HTTP from outside (provider streams, MCP messages, OpenAPI
 * answers): the body is counted while it is read, so an endless or oversized answer stops at the
 * cap instead of growing the worker's memory. Nothing here trusts a Content-Length header.
 */
import { TollgateError } from '../common/tollgate-error';

/** The marker (global registry, so that it survives package copies) of {@link BodyTooLargeError}. */
/** The error a capped body raises once more than its cap of bytes arrived; the request had gone out. */
export class BodyTooLargeError extends TollgateError {
  static override readonly marker = 'tollgate.error.BodyTooLargeError';
  readonly maxBytes: number;
  readonly url: string;

  constructor({ maxBytes, url }: { maxBytes: number; url: string }) {
    super(`the answer of ${url} passed ${maxBytes} bytes; the rest was not read`);
    this.name = 'BodyTooLargeError';
    this.maxBytes = maxBytes;
    this.url = url;
  }
}

/** A stream that passes bytes through until more than `maxBytes` have come, then errors with {@link BodyTooLargeError} and cancels its source. */
export function capStream(
  source: ReadableStream<Uint8Array>,
  { maxBytes, url }: { maxBytes: number; url: string },
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let received = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        controller.error(error);
        return;
      }
      if (chunk.done) {
        controller.close();
        return;
      }
      received += chunk.value.byteLength;
      if (received > maxBytes) {
        controller.error(new BodyTooLargeError({ maxBytes, url }));
        reader.cancel().catch(() => undefined);
        return;
      }
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/** A response whose body is capped at `maxBytes` (headers, status and url as received). */
export function capResponse(response: Response, maxBytes: number): Response {
  if (!response.body) return response;
  const capped = new Response(capStream(response.body, { maxBytes, url: response.url || 'the server' }), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // `url`, `redirected` and `type` are read-only on a constructed Response; carry what callers read.
  Object.defineProperty(capped, 'url', { value: response.url });
  Object.defineProperty(capped, 'redirected', { value: response.redirected });
  return capped;
}

/** A fetch whose every answer's body is capped at `maxBytes` while it is read (see {@link capResponse}). */
export function cappedFetch(maxBytes: number, inner: typeof globalThis.fetch = globalThis.fetch): typeof globalThis.fetch {
  if (!Number.isInteger(maxBytes) || maxBytes <= 0) throw new RangeError(`maxBytes must be a positive whole number, got ${maxBytes}`);
  return async (input, init) => capResponse(await inner(input, init), maxBytes);
}

/** Reads a whole capped body as text (UTF-8), raising {@link BodyTooLargeError} past `maxBytes`. */
export async function readCappedText(response: Response, maxBytes: number): Promise<string> {
  return capResponse(response, maxBytes).text();
}
