import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyTooLargeError, cappedFetch, readCappedText } from '../../hardened/capped-fetch';

describe('cappedFetch', () => {
  let server: Server;
  let base: string;
  let endlessChunksSent = 0;
  let endlessClosed = false;

  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url === '/small') {
        response.end('hello');
      } else if (request.url === '/lying-length') {
        // Says 5 bytes, sends a megabyte: the cap counts what arrives, not what the header says.
        response.writeHead(200, { 'content-length': String(1024 * 1024) });
        response.end(Buffer.alloc(1024 * 1024, 'x'));
      } else {
        // Endless: a chunk every millisecond until the client goes away.
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        const timer = setInterval(() => {
          endlessChunksSent += 1;
          response.write(Buffer.alloc(16 * 1024, 'y'));
        }, 1);
        response.on('close', () => {
          endlessClosed = true;
          clearInterval(timer);
        });
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('passes an answer under the cap through unchanged', async () => {
    const response = await cappedFetch(1024)(`${base}/small`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('hello');
  });

  it('stops an answer at the cap whatever its Content-Length says', async () => {
    const failure = await readCappedText(await fetch(`${base}/lying-length`), 64 * 1024).catch((error: unknown) => error);
    expect(BodyTooLargeError.isInstance(failure)).toBe(true);
    expect((failure as BodyTooLargeError).maxBytes).toBe(64 * 1024);
  });

  it('stops an endless stream at the cap and closes the connection', async () => {
    const response = await cappedFetch(256 * 1024)(`${base}/endless`);
    const failure = await response.text().catch((error: unknown) => error);
    expect(BodyTooLargeError.isInstance(failure)).toBe(true);
    await expect.poll(() => endlessClosed, { timeout: 10_000 }).toBe(true);
    const sentAtClose = endlessChunksSent;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(endlessChunksSent).toBe(sentAtClose);
  });

  it('refuses a cap that is not a positive whole number', () => {
    expect(() => cappedFetch(0)).toThrow(/maxBytes must be a positive whole number/);
    expect(() => cappedFetch(1.5)).toThrow(/maxBytes/);
  });

  it('knows its errors across copies by their marker, not their class', () => {
    const lookalike = Object.assign(new Error('x'), { [Symbol.for('tollgate.error.BodyTooLargeError')]: true });
    expect(BodyTooLargeError.isInstance(lookalike)).toBe(true);
    expect(BodyTooLargeError.isInstance(new Error('x'))).toBe(false);
    expect(BodyTooLargeError.isInstance('text')).toBe(false);
  });
});
