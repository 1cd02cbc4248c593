import { open } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { BodyTooLargeError, readCappedText } from '../../hardened/capped-fetch';
import { isDocumentUrl } from './openapi-config';

/** How long fetching a document by URL may take. */
const DOCUMENT_FETCH_TIMEOUT_MS = 30_000;

/** Reads at most `maxBytes` of a file; more is an error naming the cap. */
async function readCappedFile(file: string, maxBytes: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) throw new Error(`the document is longer than maxDocumentBytes (${maxBytes} bytes)`);
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** The document's text, from its file or its URL, cut off past `maxBytes` with an error naming the cap. */
async function documentText(document: string, maxBytes: number): Promise<string> {
  if (!isDocumentUrl(document)) return readCappedFile(document, maxBytes);
  // No credentials go with it, and a redirect is not followed: the document is where the config says.
  const response = await fetch(document, { redirect: 'error', signal: AbortSignal.timeout(DOCUMENT_FETCH_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`fetching it answered ${response.status}`);
  try {
    return await readCappedText(response, maxBytes);
  } catch (error) {
    if (BodyTooLargeError.isInstance(error))
      throw new Error(`the document is longer than maxDocumentBytes (${maxBytes} bytes)`, { cause: error });
    throw error;
  }
}

/**
 * Reads an OpenAPI 3.0 or 3.1 document (JSON or YAML, a file or a URL) within its byte cap and
 * validates it against the OpenAPI specification with a maintained parser, which follows no
 * reference outside the document. Returns the document as written (its references kept), since
 * each operation's schema is built from it. Throws one line naming what is wrong.
 */
export async function loadOpenapiDocument(document: string, { maxBytes }: { maxBytes: number }): Promise<Record<string, unknown>> {
  const text = await documentText(document, maxBytes);
  let parsed: unknown;
  try {
    // YAML aliases are bounded, so a document of a few bytes cannot expand into gigabytes.
    parsed = text.trimStart().startsWith('{') ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new Error(`it is neither JSON nor YAML: ${(error as Error).message.split('\n')[0]}`, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('it is not an OpenAPI document (no object)');
  if ((parsed as Record<string, unknown>).swagger !== undefined)
    throw new Error('it is a Swagger 2.0 document; an OpenAPI 3.0 or 3.1 document is needed');
  const version = (parsed as Record<string, unknown>).openapi;
  if (typeof version !== 'string' || !/^3\.[01]\.\d+/.test(version))
    throw new Error(`it is not an OpenAPI 3.0 or 3.1 document (openapi: ${JSON.stringify(version ?? null)})`);
  // The parser (and its JSON Schema validator of the OpenAPI specification) is loaded by a worker with an OpenAPI source only.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const SwaggerParser = require('@apidevtools/swagger-parser') as typeof import('@apidevtools/swagger-parser');
  try {
    await SwaggerParser.validate(structuredClone(parsed) as never, {
      resolve: { external: false },
      dereference: { circular: 'ignore' },
    });
  } catch (error) {
    throw new Error(`it is not a valid OpenAPI document: ${(error as Error).message.split('\n')[0]}`, { cause: error });
  }
  return parsed as Record<string, unknown>;
}
