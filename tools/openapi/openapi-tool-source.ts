import { toMilliseconds } from '../../common/duration';
import { EFFECT_TRAITS, isWriteEffect } from '../../common/effects';
import { parseConfigSection } from '../../config/config-error';
import { canonicalJson, sha256 } from '../canonical-json';
import type { StatusAnswer, ToolContext, ToolDefinition } from '../define-tool';
import { jsonSchemaInput } from '../json-schema/json-schema-input';
import { sourceToolName } from '../source-tool-name';
import { sourceToolPolicy } from '../tool-config';
import { ToolError } from '../tool-error';
import { ToolSourceError, type OpenToolSource, type ToolSource } from '../tool-source';
import {
  openapiSection,
  type FieldNormalisation,
  type OpenapiConfig,
  type OpenapiConfigInput,
  type OpenapiSourceConfig,
} from './openapi-config';
import { loadOpenapiDocument } from './openapi-document';
import { AnswerLostError, NotSentError } from '../call-errors';
import { retryAfterMs, sendHttpRequest, UnbuiltRequestError, type HttpAnswer, type HttpRequest } from './openapi-http';
import { documentOperations, namesOperation, operationEffect, type ApiOperation } from './openapi-operations';
import { answerBody, buildRequest, fieldValueProblem, serverMessage } from './openapi-request';
import { compareWrittenFields } from './openapi-field-compare';
import { SentPreconditions, strongEtag } from './openapi-preconditions';

type Args = Record<string, unknown>;

/** What one API's tools share: where requests go, with which headers, within which bounds. */
interface ApiContext {
  name: string;
  source: OpenapiSourceConfig;
  baseURL: URL;
  headers: Record<string, string>;
  /** The header values (tokens), removed from anything the server echoes into a message. */
  secrets: string[];
  /** The If-Match of each conditional write whose answer is unknown, for its status check. */
  preconditions: SentPreconditions;
}

/** The digest of what the model and an approver see of an operation's tool: its name, description and input schema. */
export function openapiDefinitionDigest(name: string, operation: ApiOperation): string {
  return sha256(canonicalJson({ name, description: operation.description, inputSchema: operation.inputSchema }));
}

function hideSecrets(text: string, secrets: string[]): string {
  return secrets.reduce((said, secret) => said.split(secret).join('[redacted]'), text);
}

/**
 * What an answer means, by its status: 2xx the result (its body parsed by its media type); 400 and
 * 422 the server refusing the arguments, 401 and 403 a refusal, 408, 429 and 503 not handled now
 * (retryable, after the server's Retry-After), any other 4xx the server's refusal. For a read a
 * 3xx is a refusal (redirects are never followed) and a 5xx retryable; for a write a 3xx, a 500,
 * 502, 504 (or another 5xx) and a 409 to a request with an Idempotency-Key say the server may have
 * acted, so they are thrown as a lost answer: the boundary reports the outcome unknown.
 */
function answerOutcome(
  answer: HttpAnswer,
  { api, operation, write, keyed }: { api: ApiContext; operation: ApiOperation; write: boolean; keyed: boolean },
): unknown {
  const { status } = answer;
  if (status >= 200 && status < 300) return answerBody(answer);
  const who = `${api.name} ${operation.operationId}`;
  const said = hideSecrets(serverMessage(answer), api.secrets);
  const message = `${who} answered ${status}${said ? `: ${said}` : ''}`;
  const lost = () => new AnswerLostError(`${message} (the server may have acted on it)`);
  if (status >= 300 && status < 400) {
    const location = String(answer.headers.location ?? '');
    let target = 'elsewhere';
    try {
      target = new URL(location, api.baseURL).origin;
    } catch {
      // An unreadable Location is named as "elsewhere".
    }
    if (write) throw lost();
    throw new ToolError(`${who} answered ${status}, a redirect to ${target}, which is not followed`, 'tool_failure');
  }
  if (status === 400 || status === 422) throw new ToolError(message, 'invalid_arguments');
  if (status === 401 || status === 403) throw new ToolError(message, 'forbidden');
  if (status === 408 || status === 429 || status === 503) {
    const after = retryAfterMs(answer.headers['retry-after'], toMilliseconds(api.source.maxRetryAfter));
    throw new ToolError(message, 'transient_failure', true, { retryAfterMs: after });
  }
  if (status === 409 && write && keyed) throw lost();
  // The server did not apply it (RFC 9110 §13.1.1), and the resource changed since the GET this write was
  // conditioned on: neither success nor a retry, since sending it again would overwrite what someone else did.
  if (status === 412 && write)
    throw new ToolError(
      `${who} answered 412: the resource changed since it was read, so this write was not applied; read it again before deciding to write${said ? ` (${said})` : ''}`,
      'tool_failure',
    );
  if (status >= 500) {
    if (write) throw lost();
    throw new ToolError(message, 'transient_failure');
  }
  throw new ToolError(message, 'tool_failure');
}

/**
 * An operation's request for these arguments; whatever keeps it from being built is the arguments'
 * fault, before anything is sent (a `ToolError`, so a write's handler never counts as cut off).
 */
function builtRequest(api: ApiContext, operation: ApiOperation, args: Args, idempotencyKey?: string): HttpRequest {
  try {
    return buildRequest(operation, args, { baseURL: api.baseURL, headers: api.headers, idempotencyKey });
  } catch (error) {
    if (ToolError.isInstance(error)) throw error;
    const message = hideSecrets(String((error as Error)?.message ?? error), api.secrets);
    throw new ToolError(
      `${api.name} ${operation.operationId}: the request could not be built, so it was not sent: ${message}`,
      'invalid_arguments',
    );
  }
}

/**
 * Sends one request of an operation and gives its answer whatever its status; a request not built
 * or not sent is a `ToolError` (nothing happened), one whose answer is lost is thrown as such for a
 * write (the server may have acted), as a transient failure for a read.
 */
async function exchange(
  api: ApiContext,
  operation: ApiOperation,
  args: Args,
  { signal, idempotencyKey, write, ifMatch }: { signal: AbortSignal; idempotencyKey?: string; write: boolean; ifMatch?: string },
): Promise<HttpAnswer> {
  const request = builtRequest(api, operation, args, idempotencyKey);
  if (ifMatch !== undefined) request.headers['if-match'] = ifMatch;
  try {
    return await sendHttpRequest(request, { signal, maxResponseBytes: api.source.maxResponseBytes });
  } catch (error) {
    const detail = hideSecrets((error as Error).message, api.secrets);
    // Never built, never sent: the arguments cannot make a request, and the intent is released, not left unknown.
    if (UnbuiltRequestError.isInstance(error)) throw new ToolError(detail, 'invalid_arguments');
    if (NotSentError.isInstance(error)) throw new ToolError(detail, 'transient_failure');
    if (!write) throw new ToolError(detail, 'transient_failure');
    throw new AnswerLostError(detail, { cause: error });
  }
}

/** Sends one request of an operation; a failure is told by what is known of it (see `answerOutcome`). */
async function call(
  api: ApiContext,
  operation: ApiOperation,
  args: Args,
  { signal, idempotencyKey, write, ifMatch }: { signal: AbortSignal; idempotencyKey?: string; write: boolean; ifMatch?: string },
): Promise<unknown> {
  const answer = await exchange(api, operation, args, { signal, idempotencyKey, write, ifMatch });
  return answerOutcome(answer, { api, operation, write, keyed: idempotencyKey !== undefined && operation.idempotencyHeader !== undefined });
}

/** The arguments of a write that its paired GET takes, by name. */
function checkArgsOf(check: ApiOperation, args: Args): Args {
  return Object.fromEntries(
    check.parameters.filter((parameter) => parameter.name in args).map((parameter) => [parameter.name, args[parameter.name]]),
  );
}

/** The methods whose target is the resource itself, so that the ETag of a GET of the same path may condition them. */
const CONDITIONAL_METHODS: ReadonlySet<string> = new Set(['PUT', 'PATCH', 'DELETE']);

/** Whether a write and its status GET address one resource (one path), so the GET's ETag is the write's target's. */
function sameResource(write: ApiOperation, check: ApiOperation): boolean {
  return CONDITIONAL_METHODS.has(write.method) && write.path === check.path;
}

/**
 * A write sent on the condition that its resource is as its GET just read it: the GET's strong ETag
 * as `If-Match`, remembered until the write is answered, so that a status check after a lost answer
 * can tell "unchanged, so not applied". A resource the GET did not find (404, 410) or that has no
 * strong ETag is written without a condition; a GET that fails otherwise fails the call, nothing written.
 */
async function conditionalCall(
  api: ApiContext,
  { write, check }: { write: ApiOperation; check: ApiOperation },
  args: Args,
  { signal, idempotencyKey }: { signal: AbortSignal; idempotencyKey: string },
): Promise<unknown> {
  // Arguments that cannot make the write refuse it before the GET goes out, so nothing at all is sent for them.
  builtRequest(api, write, args, idempotencyKey);
  const read = await exchange(api, check, checkArgsOf(check, args), { signal, write: false });
  const found = read.status >= 200 && read.status < 300;
  if (!found && read.status !== 404 && read.status !== 410) answerOutcome(read, { api, operation: check, write: false, keyed: false });
  const etag = found ? strongEtag(read) : undefined;
  if (etag !== undefined) api.preconditions.remember(idempotencyKey, etag);
  else api.preconditions.forget(idempotencyKey);
  try {
    const data = await call(api, write, args, { signal, idempotencyKey, write: true, ifMatch: etag });
    api.preconditions.forget(idempotencyKey);
    return data;
  } catch (error) {
    // Only a lost answer leaves the question open; any answer closed it.
    if (!AnswerLostError.isInstance(error)) api.preconditions.forget(idempotencyKey);
    throw error;
  }
}

/**
 * The answer of a paired GET as a write's status. A DELETE applied when the GET finds nothing (404,
 * 410); any other write not applied when it finds nothing. A PUT or PATCH applied when the resource
 * holds the fields it sent (compared as `compare` says); when it does not, not applied only with
 * proof: the resource still has the ETag this worker's lost write was conditioned on, so it never
 * changed. Else unknown: a difference alone may be a normalisation or someone else's change.
 */
function pairedStatus(
  api: ApiContext,
  { write, check, compare }: { write: ApiOperation; check: ApiOperation; compare?: Record<string, FieldNormalisation[]> },
  timeoutMs: number,
) {
  return async (args: Args, { idempotencyKey }: { idempotencyKey: string }): Promise<StatusAnswer> => {
    const request = buildRequest(check, checkArgsOf(check, args), { baseURL: api.baseURL, headers: api.headers });
    const answer = await sendHttpRequest(request, {
      signal: AbortSignal.timeout(timeoutMs),
      maxResponseBytes: api.source.maxResponseBytes,
    });
    const gone = answer.status === 404 || answer.status === 410;
    const there = answer.status >= 200 && answer.status < 300;
    if (write.method === 'DELETE') return gone ? { state: 'applied', data: { status: answer.status } } : there ? 'not_applied' : 'unknown';
    if (gone) return 'not_applied';
    if (!there) return 'unknown';
    const now = answerBody(answer);
    if ((write.method === 'PUT' || write.method === 'PATCH') && isRecord(args.body)) {
      if (compareWrittenFields(args.body, now, compare) === 'holds') return { state: 'applied', data: now };
      const sentWith = sameResource(write, check) ? api.preconditions.sentWith(idempotencyKey) : undefined;
      if (sentWith !== undefined && strongEtag(answer) === sentWith) return 'not_applied';
      return 'unknown';
    }
    return { state: 'applied', data: now };
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The status of a write to an API that honours Idempotency-Key: the same request sent again with
 * the same key, which the API answers with its first answer if it applied it, or applies now —
 * either way once. A refusal or a lost answer leaves it unknown.
 */
function resendStatus(api: ApiContext, operation: ApiOperation, timeoutMs: number) {
  return async (args: Args, { idempotencyKey }: { idempotencyKey: string }): Promise<StatusAnswer> => {
    const data = await call(api, operation, args, { signal: AbortSignal.timeout(timeoutMs), idempotencyKey, write: true });
    return { state: 'applied', data };
  };
}

/** The body fields an operation's request schema declares, when it declares them (its own `properties`, or those of the `$defs` entry it refers to). */
function declaredBodyFields(operation: ApiOperation): string[] | undefined {
  const schema = operation.inputSchema as { properties?: { body?: Record<string, unknown> }; $defs?: Args; definitions?: Args };
  let body = schema.properties?.body;
  const ref = typeof body?.$ref === 'string' ? body.$ref : undefined;
  if (ref) {
    const name = decodeURIComponent(ref.replace(/^#\/(\$defs|definitions)\//, ''))
      .replace(/~1/g, '/')
      .replace(/~0/g, '~');
    body = (schema.$defs ?? schema.definitions ?? {})[name] as Record<string, unknown> | undefined;
  }
  return isRecord(body?.properties) ? Object.keys(body.properties) : undefined;
}

/** Refuses a `compare` the status check could never use: without a status GET, on a write that sends no fields, or naming a field the body does not declare. */
function checkCompare(
  operation: ApiOperation,
  compare: Record<string, FieldNormalisation[]>,
  { where, hasStatus }: { where: string; hasStatus: boolean },
): void {
  const key = `operations.${operation.operationId}.compare`;
  if (!hasStatus) throw new ToolSourceError(`${where}: ${key} compares what its status GET answers, and it has no status`);
  if ((operation.method !== 'PUT' && operation.method !== 'PATCH') || !operation.body)
    throw new ToolSourceError(
      `${where}: ${key} compares the fields a PUT or PATCH sends, and this is a ${operation.method} without a body`,
    );
  const declared = declaredBodyFields(operation);
  const unknown = declared ? Object.keys(compare).filter((field) => !declared.includes(field)) : [];
  if (unknown.length > 0)
    throw new ToolSourceError(
      `${where}: ${key} names ${unknown.join(', ')}, which its request body does not declare (it declares ${declared!.join(', ') || 'none'})`,
    );
}

/** One operation as a registry entry. */
function operationTool(api: ApiContext, operation: ApiOperation, byId: Map<string, ApiOperation>): ToolDefinition {
  const { source } = api;
  const override = source.operations[operation.operationId] ?? {};
  const name = sourceToolName(api.name, operation.operationId);
  const where = `openapi source "${api.name}": operation ${operation.operationId}`;
  const effect = operationEffect(operation, source);
  const write = isWriteEffect(effect);
  const policy = sourceToolPolicy(override);
  const { timeoutMs } = policy;
  let input;
  try {
    input = jsonSchemaInput(operation.inputSchema);
  } catch (error) {
    throw new ToolSourceError(`${where}: ${(error as Error).message}`);
  }
  const statusId =
    override.status ??
    (source.trustExtensions && typeof operation.extensions.status === 'string' ? operation.extensions.status : undefined);
  let status: ((args: Args, context: { idempotencyKey: string }) => Promise<StatusAnswer>) | undefined;
  let check: ApiOperation | undefined;
  if (override.compare !== undefined) checkCompare(operation, override.compare, { where, hasStatus: statusId !== undefined });
  if (statusId !== undefined) {
    check = byId.get(statusId);
    if (!check) throw new ToolSourceError(`${where}: its status operation ${statusId} is not in the document (or cannot be served)`);
    if (check.method !== 'GET') throw new ToolSourceError(`${where}: its status operation ${statusId} is a ${check.method}, not a GET`);
    if (!write) throw new ToolSourceError(`${where}: a ${EFFECT_TRAITS[effect].label} has no status check; only writes do`);
    const missing = check.parameters.filter(
      (parameter) => parameter.required && !operation.parameters.some((own) => own.name === parameter.name),
    );
    if (missing.length > 0)
      throw new ToolSourceError(
        `${where}: its status operation ${statusId} needs ${missing.map((parameter) => parameter.name).join(', ')}, which this operation does not take`,
      );
    status = pairedStatus(api, { write: operation, check, compare: override.compare }, timeoutMs);
  } else if (write && source.honoursIdempotencyKey && operation.idempotencyHeader && EFFECT_TRAITS[effect].statusCheck === 'optional') {
    status = resendStatus(api, operation, timeoutMs);
  }
  if (EFFECT_TRAITS[effect].statusCheck === 'required' && !status)
    throw new ToolSourceError(
      `${where}: a ${EFFECT_TRAITS[effect].label} needs a status operation (operations.${operation.operationId}.status: the operationId of a GET)`,
    );

  const paired = write && check && sameResource(operation, check) ? check : undefined;
  const handler = (args: unknown, context: ToolContext) =>
    paired && context.idempotencyKey !== undefined
      ? conditionalCall(api, { write: operation, check: paired }, args as Args, {
          signal: context.signal,
          idempotencyKey: context.idempotencyKey,
        })
      : call(api, operation, args as Args, { signal: context.signal, idempotencyKey: write ? context.idempotencyKey : undefined, write });
  return {
    name,
    description: operation.description,
    input,
    effect,
    ...(status ? { status } : {}),
    ...policy,
    source: { name: 'openapi', jsonSchema: operation.inputSchema, definitionDigest: openapiDefinitionDigest(name, operation) },
    handler,
  } as ToolDefinition;
}

/** The base URL of an API: the config's, else the document's first server (its variables at their defaults). */
function baseUrlOf(name: string, source: OpenapiSourceConfig, document: Record<string, unknown>): URL {
  if (source.baseURL) return new URL(source.baseURL);
  const servers = Array.isArray(document.servers) ? document.servers : [];
  const first = servers[0] as { url?: unknown; variables?: Record<string, { default?: unknown }> } | undefined;
  if (typeof first?.url !== 'string') throw new ToolSourceError(`openapi source "${name}": the document names no server; give baseURL`);
  const url = first.url.replace(/\{([^}]+)\}/g, (_, variable: string) => String(first.variables?.[variable]?.default ?? ''));
  try {
    return new URL(url, /^https?:\/\//i.test(source.document) ? source.document : undefined);
  } catch {
    throw new ToolSourceError(
      `openapi source "${name}": the document's server ${JSON.stringify(first.url)} is no absolute URL; give baseURL`,
    );
  }
}

/** One API: its document read and checked, its served operations as tools. */
async function apiTools(
  name: string,
  source: OpenapiSourceConfig,
  log: (line: string) => void,
  env: NodeJS.ProcessEnv,
): Promise<ToolDefinition[]> {
  const headers: Record<string, string> = {};
  for (const [header, variable] of Object.entries(source.headersFromEnv ?? {})) {
    const value = env[variable];
    if (value === undefined || value === '')
      throw new ToolSourceError(`openapi source "${name}": headersFromEnv.${header} names ${variable}, which is not set`);
    // Said without the value, which is a secret.
    const problem = fieldValueProblem(value);
    if (problem) throw new ToolSourceError(`openapi source "${name}": headersFromEnv.${header}: the value of ${variable} ${problem}`);
    headers[header.toLowerCase()] = value;
  }
  let document: Record<string, unknown>;
  let found: ReturnType<typeof documentOperations>;
  try {
    document = await loadOpenapiDocument(source.document, { maxBytes: source.maxDocumentBytes });
    found = documentOperations(document, { maxOperations: source.maxOperations });
  } catch (error) {
    throw new ToolSourceError(`openapi source "${name}": the document ${source.document}: ${(error as Error).message.split('\n')[0]}`, {
      cause: error,
    });
  }
  const api: ApiContext = {
    name,
    source,
    baseURL: baseUrlOf(name, source, document),
    headers,
    secrets: Object.values(headers).filter((value) => value.length >= 4),
    preconditions: new SentPreconditions(),
  };
  const known = [...found.operations, ...found.skipped];
  const named = [
    ...(source.include ?? []).map((entry) => ['include', entry] as const),
    ...source.exclude.map((entry) => ['exclude', entry] as const),
    ...Object.keys(source.operations).map((entry) => [`operations.${entry}`, entry] as const),
  ];
  for (const [key, entry] of named) {
    const matches = entry.startsWith('tag:')
      ? found.operations.some((operation) => namesOperation(entry, operation))
      : known.some((operation) => operation.operationId === entry);
    if (!matches)
      throw new ToolSourceError(
        `config openapi.sources.${name}.${key}: the document has no operation ${entry.startsWith('tag:') ? `tagged ${entry.slice(4)}` : `named "${entry}"`}`,
      );
  }
  const chosen = (operation: Pick<ApiOperation, 'operationId' | 'tags'>) =>
    (!source.include || source.include.some((entry) => namesOperation(entry, operation))) &&
    !source.exclude.some((entry) => namesOperation(entry, operation)) &&
    source.operations[operation.operationId]?.enabled !== false;
  for (const skipped of found.skipped) {
    const wanted = source.include?.includes(skipped.operationId) || Object.hasOwn(source.operations, skipped.operationId);
    const line = `openapi source "${name}": operation ${skipped.operationId} is left out: ${skipped.reason}`;
    if (wanted) throw new ToolSourceError(line);
    if (chosen({ operationId: skipped.operationId, tags: [] })) log(line);
  }
  const byId = new Map(found.operations.map((operation) => [operation.operationId, operation]));
  return found.operations.filter(chosen).map((operation) => operationTool(api, operation, byId));
}

/**
 * Reads every configured API's document and turns its chosen operations into tools named
 * `<source>__<operationId>`. An API whose document cannot be read stops here with one line naming
 * it, unless it is `optional`: then it is logged and its tools are left out.
 */
export async function startOpenapiTools({
  openapi,
  log = (line) => console.warn(line),
  env = process.env,
}: {
  openapi: OpenapiConfig;
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<OpenToolSource> {
  const tools: ToolDefinition[] = [];
  for (const [name, source] of Object.entries(openapi.sources)) {
    try {
      tools.push(...(await apiTools(name, source, log, env)));
    } catch (error) {
      const line = (error as Error).message.split('\n')[0];
      if (!source.optional || line.startsWith('config '))
        throw ToolSourceError.isInstance(error) ? error : new ToolSourceError(line, { cause: error });
      log(`${line}; it is optional, so its tools are left out`);
    }
  }
  const names = new Set<string>();
  for (const tool of tools) {
    if (names.has(tool.name))
      throw new ToolSourceError(`openapi: two tools would both be named "${tool.name}"; rename a source or exclude one of them`);
    names.add(tool.name);
  }
  return { tools, close: async () => undefined };
}

/**
 * HTTP APIs described by OpenAPI documents as a tool source: the APIs of the config's `openapi`
 * section, or the ones given here in its shape (which then replace the section's).
 */
export function openapiToolSource(openapi?: OpenapiConfigInput): ToolSource<OpenapiConfig> {
  return {
    name: 'openapi',
    section: openapiSection,
    async open({ section, log, env }) {
      const sources = openapi === undefined ? section : parseConfigSection(openapiSection, openapi, 'openapiToolSource()');
      return startOpenapiTools({ openapi: sources, log, env });
    },
  };
}
