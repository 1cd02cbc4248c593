import { open } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { BodyTooLargeError, readCappedText } from '../../hardened/capped-fetch';
import { checkJsonBounds } from '../../hardened/json-bounds';
import { isDocumentUrl } from './openapi-config';

/** How long fetching a document by URL may take. */
const DOCUMENT_FETCH_TIMEOUT_MS = 30_000;

/** How deep a document may nest: far past any real API's (its schemas refer to components instead of nesting). */
export const MAX_DOCUMENT_DEPTH = 128;

/** The value a JSON pointer fragment (`#/components/schemas/Item`) names in the document, or undefined. */
function atFragment(document: unknown, ref: string): unknown {
  if (ref === '#') return document;
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = document;
  for (const raw of ref.slice(2).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

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
 * Reads an OpenAPI 3.0 or 3.1 document (JSON or YAML, a file or a URL) within its byte cap, checks
 * its nesting and size without recursion, that each of its own references (`#/…`) names something
 * in it, and validates it against the OpenAPI specification's JSON Schema as written: its
 * references are not expanded, so a document whose schemas refer to each other twice per level
 * costs what its text costs, not 2^depth (each operation's schema is measured within the schema
 * work budget when it becomes a tool). Returns the document as written. Throws one line naming
 * what is wrong.
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
  let references: string[];
  try {
    // As many values as bytes at most (YAML aliases aside, which are capped above).
    references = checkJsonBounds(parsed, { maxDepth: MAX_DOCUMENT_DEPTH, maxNodes: maxBytes });
  } catch (error) {
    throw new Error(`it is over the bounds of a document: ${(error as Error).message}`, { cause: error });
  }
  for (const ref of references)
    if (atFragment(parsed, ref) === undefined) throw new Error(`its $ref ${JSON.stringify(ref)} names nothing in the document`);
  // The parser's own validate() dereferences the document first and validates what that gives, which a
  // DAG of references makes exponential (2.2 s at depth 18, 78.5 s at 23): only its validator of the
  // specification's JSON Schema is used, on the document as written. It is loaded by a worker with an OpenAPI source only.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const validateSpecificationSchema = require('@apidevtools/swagger-parser/lib/validators/schema.js') as (api: unknown) => void;
  try {
    validateSpecificationSchema(structuredClone(parsed));
  } catch (error) {
    throw new Error(`it is not a valid OpenAPI document: ${(error as Error).message.split('\n')[0]}`, { cause: error });
  }
  return parsed as Record<string, unknown>;
}
