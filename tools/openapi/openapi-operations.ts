import type { ToolEffect } from '../../common/codes';
import { TOOL_EFFECTS } from '../../common/codes';
import type { OpenapiSourceConfig } from './openapi-config';

/**
 * The operations of an OpenAPI document as Tollgate serves them: each one's parameters (by name)
 * and JSON request body (under `body`) as one JSON Schema, and its effect from the method's meaning
 * (RFC 9110), the config, or a trusted document's extension. An operation that cannot be served
 * (no operationId, a cookie parameter, a body in a media type Tollgate does not send, two
 * parameters of one name, a reference outside the document's schemas) is left out, with why.
 */

/** The methods RFC 9110 defines as safe: a request that asks for nothing to change. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** The header an operation declares to take a client-chosen idempotency key (the IETF's Idempotency-Key header field). */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

type Json = Record<string, unknown>;

/** One parameter the tool takes, where it goes in the request. */
export interface OperationParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Json;
  /** Query arrays: repeated (`explode`, the default) or joined by commas. */
  explode: boolean;
}

/** One operation of the document, ready to be a tool. */
export interface ApiOperation {
  operationId: string;
  method: string;
  path: string;
  tags: string[];
  description: string;
  parameters: OperationParameter[];
  body?: { mediaType: 'application/json' | 'application/x-www-form-urlencoded'; required: boolean; schema: Json };
  /** The name the document gives the Idempotency-Key header, when the operation takes one. */
  idempotencyHeader?: string;
  /** The tool's input schema (what the model sees): parameters by name, the body under `body`. */
  inputSchema: Json;
  /** The document's `x-tollgate-effect` and `x-tollgate-status`, read only when the source trusts the document. */
  extensions: { effect?: unknown; status?: unknown };
}

/** An operation that cannot be served, and why. */
export interface SkippedOperation {
  operationId: string;
  reason: string;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON pointer inside the document (`#/components/parameters/Id`), resolved; undefined when it names nothing. */
function pointerTarget(document: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let current: unknown = document;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(current) && !Array.isArray(current)) return undefined;
    current = (current as Json)[part];
  }
  return current;
}

/** A parameter, request body or media object that may be a `$ref` to one, followed a bounded number of times. */
function deref(document: Json, value: unknown, what: string): Json {
  let current = value;
  for (let hops = 0; hops < 10; hops++) {
    if (!isObject(current)) throw new Error(`${what} is not an object`);
    if (typeof current.$ref !== 'string') return current;
    const target = pointerTarget(document, current.$ref);
    if (target === undefined) throw new Error(`${what} refers to ${JSON.stringify(current.$ref)}, which the document does not hold`);
    current = target;
  }
  throw new Error(`${what} is a chain of more than 10 references`);
}

const SCHEMA_REF = '#/components/schemas/';

/**
 * A schema of the document as a JSON Schema of its own: references to the document's component
 * schemas become `#/$defs/<name>` (collected into `defs`), an OpenAPI 3.0 schema's `nullable` and
 * boolean exclusive bounds become their JSON Schema forms. A reference anywhere else is refused.
 */
function portableSchema(schema: unknown, { openapi30, found }: { openapi30: boolean; found: Set<string> }): Json {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (!isObject(value)) return value;
    const out: Json = {};
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref') {
        if (typeof inner !== 'string' || !inner.startsWith(SCHEMA_REF) || inner.slice(SCHEMA_REF.length).includes('/'))
          throw new Error(`a schema refers to ${JSON.stringify(inner)}; only the document's own components.schemas are followed`);
        const name = decodeURIComponent(inner.slice(SCHEMA_REF.length)).replace(/~1/g, '/').replace(/~0/g, '~');
        found.add(name);
        out.$ref = `#/$defs/${encodeURIComponent(name).replace(/%2F/g, '~1')}`;
        continue;
      }
      // Properties and other maps of schemas: their keys are names, not keywords, so only their values are walked.
      out[key] = walk(inner);
    }
    if (openapi30) {
      if (out.nullable === true) {
        if (typeof out.type === 'string') out.type = [out.type, 'null'];
        else if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
      }
      delete out.nullable;
      for (const [flag, bound] of [
        ['exclusiveMinimum', 'minimum'],
        ['exclusiveMaximum', 'maximum'],
      ] as const) {
        if (out[flag] === true && typeof out[bound] === 'number') {
          out[flag] = out[bound];
          delete out[bound];
        } else if (typeof out[flag] === 'boolean') delete out[flag];
      }
    }
    return out;
  };
  return walk(schema) as Json;
}

/** Each document's component schemas made portable, once: operations that reach the same components share them. */
const portableComponents = new WeakMap<Json, Map<string, { schema: Json; found: Set<string> }>>();

/** The component schemas a set of names reaches, each made portable; a name the document lacks is an error. */
function reachableDefs(document: Json, start: Set<string>, openapi30: boolean): Json {
  const schemas = isObject(document.components) && isObject(document.components.schemas) ? document.components.schemas : {};
  let made = portableComponents.get(document);
  if (!made) portableComponents.set(document, (made = new Map()));
  const defs: Json = {};
  const queue = [...start];
  const seen = new Set(queue);
  // An index, not shift(): shifting a queue of thousands of names is quadratic.
  for (let at = 0; at < queue.length; at++) {
    const name = queue[at];
    if (!Object.hasOwn(schemas, name)) throw new Error(`a schema refers to components.schemas.${name}, which the document does not hold`);
    let component = made.get(name);
    if (!component) {
      const found = new Set<string>();
      component = { schema: portableSchema(schemas[name], { openapi30, found }), found };
      made.set(name, component);
    }
    defs[name] = component.schema;
    for (const next of component.found) {
      if (seen.has(next)) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  return defs;
}

function operationDescription(operation: Json, method: string, path: string): string {
  const parts = [operation.summary, operation.description].filter((part): part is string => typeof part === 'string' && part.trim() !== '');
  const text = parts.join('. ').trim();
  const said = text.length > 1_000 ? `${text.slice(0, 999)}…` : text;
  return `${said ? `${said} ` : ''}(${method.toUpperCase()} ${path})`;
}

/** One operation as a served tool, or the reason it cannot be. */
function describeOperation(
  document: Json,
  { method, path, pathItem, operation, openapi30 }: { method: string; path: string; pathItem: Json; operation: Json; openapi30: boolean },
): ApiOperation {
  const operationId = operation.operationId as string;
  const found = new Set<string>();
  const byKey = new Map<string, Json>();
  for (const [index, raw] of [...((pathItem.parameters as unknown[]) ?? []), ...((operation.parameters as unknown[]) ?? [])].entries()) {
    const parameter = deref(document, raw, `parameter ${index}`);
    // An operation's parameter replaces the path item's of the same name and location.
    byKey.set(`${String(parameter.in)}:${String(parameter.name)}`, parameter);
  }
  const parameters: OperationParameter[] = [];
  let idempotencyHeader: string | undefined;
  for (const parameter of byKey.values()) {
    const name = String(parameter.name);
    const location = String(parameter.in);
    if (location === 'cookie') throw new Error(`it takes a cookie parameter (${name}), which Tollgate does not send`);
    if (location !== 'path' && location !== 'query' && location !== 'header') throw new Error(`parameter ${name} is in "${location}"`);
    if (location === 'header' && name.toLowerCase() === IDEMPOTENCY_HEADER) {
      // Filled with the intent's own key by the tool, never by the model.
      idempotencyHeader = name;
      continue;
    }
    if (location === 'header' && !/^[A-Za-z0-9-]+$/.test(name))
      throw new Error(`header parameter ${JSON.stringify(name)} is no header name`);
    if (name === 'body') throw new Error('a parameter is named "body", the name its request body takes');
    if (parameters.some((other) => other.name === name)) throw new Error(`two parameters are named ${JSON.stringify(name)}`);
    if (parameter.content !== undefined) throw new Error(`parameter ${name} is described by content, not by a schema`);
    const schema = portableSchema(parameter.schema ?? {}, { openapi30, found });
    if (typeof parameter.description === 'string' && schema.description === undefined) schema.description = parameter.description;
    parameters.push({
      name,
      in: location,
      required: location === 'path' || parameter.required === true,
      schema,
      explode: parameter.explode !== false,
    });
  }
  for (const [, name] of path.matchAll(/\{([^}]*)\}/g)) {
    if (!parameters.some((parameter) => parameter.in === 'path' && parameter.name === name))
      throw new Error(`its path names {${name}}, which no path parameter declares`);
  }

  let body: ApiOperation['body'];
  if (operation.requestBody !== undefined) {
    const requestBody = deref(document, operation.requestBody, 'the request body');
    const content = isObject(requestBody.content) ? requestBody.content : {};
    const mediaType = Object.keys(content).find((type) => /^application\/([\w.-]+\+)?json$/i.test(type.split(';')[0].trim()))
      ? 'application/json'
      : Object.hasOwn(content, 'application/x-www-form-urlencoded')
        ? 'application/x-www-form-urlencoded'
        : undefined;
    if (!mediaType)
      throw new Error(`its request body is ${Object.keys(content).join(', ') || 'of no media type'}, and Tollgate sends JSON or a form`);
    const key = Object.keys(content).find((type) => (mediaType === 'application/json' ? /json/i.test(type) : type === mediaType))!;
    const media = deref(document, content[key], 'the request body media');
    body = { mediaType, required: requestBody.required === true, schema: portableSchema(media.schema ?? {}, { openapi30, found }) };
    if (typeof requestBody.description === 'string' && body.schema.description === undefined)
      body.schema.description = requestBody.description;
  }

  const defs = reachableDefs(document, found, openapi30);
  const inputSchema: Json = {
    ...(openapi30 ? {} : { $schema: 'https://json-schema.org/draft/2020-12/schema' }),
    type: 'object',
    properties: Object.fromEntries([
      ...parameters.map((parameter) => [parameter.name, parameter.schema]),
      ...(body ? [['body', body.schema]] : []),
    ]),
    required: [
      ...parameters.filter((parameter) => parameter.required).map((parameter) => parameter.name),
      ...(body?.required ? ['body'] : []),
    ],
    additionalProperties: false,
    ...(Object.keys(defs).length > 0 ? { [openapi30 ? 'definitions' : '$defs']: defs } : {}),
  };
  if (openapi30) rewriteDefs(inputSchema);
  return {
    operationId,
    method: method.toUpperCase(),
    path,
    tags: Array.isArray(operation.tags) ? operation.tags.filter((tag): tag is string => typeof tag === 'string') : [],
    description: operationDescription(operation, method, path),
    parameters,
    body,
    idempotencyHeader,
    inputSchema,
    extensions: { effect: operation['x-tollgate-effect'], status: operation['x-tollgate-status'] },
  };
}

/** Draft-07 (the dialect an OpenAPI 3.0 schema is closest to) keeps shared schemas under `definitions`. */
function rewriteDefs(schema: unknown): void {
  if (Array.isArray(schema)) return schema.forEach(rewriteDefs);
  if (!isObject(schema)) return;
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/'))
      schema.$ref = `#/definitions/${value.slice('#/$defs/'.length)}`;
    else rewriteDefs(value);
  }
}

/** Every operation of a document (counted first against `maxOperations`), served or skipped. */
export function documentOperations(
  document: Json,
  { maxOperations }: { maxOperations: number },
): { operations: ApiOperation[]; skipped: SkippedOperation[] } {
  const paths = isObject(document.paths) ? document.paths : {};
  const openapi30 = String(document.openapi ?? '').startsWith('3.0');
  const found: Array<{ method: string; path: string; pathItem: Json; operation: Json }> = [];
  for (const [path, rawItem] of Object.entries(paths)) {
    if (!isObject(rawItem)) continue;
    if (typeof rawItem.$ref === 'string') throw new Error(`paths.${path} is a $ref, which is not followed`);
    for (const method of METHODS) {
      const operation = rawItem[method];
      if (!isObject(operation)) continue;
      found.push({ method, path, pathItem: rawItem, operation });
      if (found.length > maxOperations) throw new Error(`the document declares more than maxOperations (${maxOperations}) operations`);
    }
  }
  const operations: ApiOperation[] = [];
  const skipped: SkippedOperation[] = [];
  const ids = new Set<string>();
  for (const entry of found) {
    const id = entry.operation.operationId;
    if (typeof id !== 'string' || id === '') {
      skipped.push({ operationId: `${entry.method.toUpperCase()} ${entry.path}`, reason: 'it has no operationId' });
      continue;
    }
    if (ids.has(id)) throw new Error(`two operations have the operationId ${JSON.stringify(id)}`);
    ids.add(id);
    try {
      operations.push(describeOperation(document, { ...entry, openapi30 }));
    } catch (error) {
      skipped.push({ operationId: id, reason: (error as Error).message });
    }
  }
  return { operations, skipped };
}

/** Whether an `include`/`exclude` entry names an operation: its operationId, or `tag:<tag>`. */
export function namesOperation(entry: string, operation: Pick<ApiOperation, 'operationId' | 'tags'>): boolean {
  return entry.startsWith('tag:') ? operation.tags.includes(entry.slice('tag:'.length)) : entry === operation.operationId;
}

/**
 * An operation's effect: the config's override; else, from a trusted document, its
 * `x-tollgate-effect`; else by the method: GET, HEAD and OPTIONS read (RFC 9110's safe methods),
 * anything else is an irreversible write (PUT and DELETE are idempotent by RFC 9110, but a repeat
 * is the same request only if nothing changed in between: that takes a status check).
 */
export function operationEffect(operation: ApiOperation, source: OpenapiSourceConfig): ToolEffect {
  const override = source.operations[operation.operationId]?.effect;
  if (override) return override;
  const declared = operation.extensions.effect;
  if (source.trustExtensions && declared !== undefined) {
    if (typeof declared !== 'string' || !TOOL_EFFECTS.includes(declared as ToolEffect))
      throw new Error(`operation ${operation.operationId}: x-tollgate-effect must be one of ${TOOL_EFFECTS.join(', ')}`);
    return declared as ToolEffect;
  }
  return SAFE_METHODS.has(operation.method) ? 'read' : 'irreversible_write';
}
