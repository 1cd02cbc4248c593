import { ToolError } from '../tool-error';
import type { HttpAnswer, HttpRequest } from './openapi-http';
import type { ApiOperation } from './openapi-operations';

/**
 * A call's arguments as the HTTP request of its operation: path parameters encoded into the path
 * (never a `.` or `..` segment, so no value can leave the operation's path), query parameters as a
 * form, header parameters as headers, `body` as JSON or a form; the source's own headers (tokens)
 * and the intent's Idempotency-Key added last, so no argument can replace them.
 */
export function buildRequest(
  operation: ApiOperation,
  args: Record<string, unknown>,
  { baseURL, headers, idempotencyKey }: { baseURL: URL; headers: Record<string, string>; idempotencyKey?: string },
): HttpRequest {
  const scalar = (name: string, value: unknown): string => {
    if (Array.isArray(value)) return value.map((item) => scalar(name, item)).join(',');
    if (value === null || typeof value === 'object') return JSON.stringify(value);
    return String(value);
  };
  let path = operation.path;
  const query = new URLSearchParams();
  const requestHeaders: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.1' };
  for (const parameter of operation.parameters) {
    const value = args[parameter.name];
    if (value === undefined) continue;
    if (parameter.in === 'path') {
      const text = scalar(parameter.name, value);
      if (text === '.' || text === '..' || text === '')
        throw new ToolError(`path parameter ${parameter.name} may not be ${JSON.stringify(text)}`, 'invalid_arguments');
      path = path.split(`{${parameter.name}}`).join(encodeURIComponent(text));
    } else if (parameter.in === 'query') {
      if (Array.isArray(value) && parameter.explode) for (const item of value) query.append(parameter.name, scalar(parameter.name, item));
      else query.append(parameter.name, scalar(parameter.name, value));
    } else {
      const text = scalar(parameter.name, value);
      if (/[\r\n\0]/.test(text)) throw new ToolError(`header parameter ${parameter.name} holds a line break`, 'invalid_arguments');
      requestHeaders[parameter.name.toLowerCase()] = text;
    }
  }
  const base = baseURL.href.endsWith('/') ? baseURL.href.slice(0, -1) : baseURL.href;
  const url = new URL(`${base}${path}`);
  const basePath = baseURL.pathname.endsWith('/') ? baseURL.pathname : `${baseURL.pathname}/`;
  if (url.origin !== baseURL.origin || !`${url.pathname}/`.startsWith(basePath))
    throw new ToolError(`the arguments lead outside ${baseURL.origin}${baseURL.pathname}`, 'invalid_arguments');
  url.search = query.toString();

  let body: Buffer | undefined;
  if (operation.body && args.body !== undefined) {
    if (operation.body.mediaType === 'application/json') {
      body = Buffer.from(JSON.stringify(args.body));
      requestHeaders['content-type'] = 'application/json';
    } else {
      const form = new URLSearchParams();
      for (const [key, value] of Object.entries((args.body ?? {}) as Record<string, unknown>)) {
        if (Array.isArray(value)) for (const item of value) form.append(key, scalar(key, item));
        else if (value !== undefined) form.append(key, scalar(key, value));
      }
      body = Buffer.from(form.toString());
      requestHeaders['content-type'] = 'application/x-www-form-urlencoded';
    }
  }
  for (const [name, value] of Object.entries(headers)) requestHeaders[name.toLowerCase()] = value;
  if (operation.idempotencyHeader && idempotencyKey) requestHeaders[operation.idempotencyHeader.toLowerCase()] = idempotencyKey;
  return { method: operation.method, url, headers: requestHeaders, body };
}

/** An answer's media type, lower case, without parameters. */
function mediaTypeOf(answer: HttpAnswer): string {
  return String(answer.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
}

/**
 * An answer's body as the model sees it: JSON parsed, text as text, anything else named by its
 * media type and size. A body that is not the JSON its media type says is given as its text.
 */
export function answerBody(answer: HttpAnswer): unknown {
  if (answer.body.length === 0) return { status: answer.status };
  const type = mediaTypeOf(answer);
  const text = () => answer.body.toString('utf8');
  if (/^application\/([\w.-]+\+)?json$/.test(type)) {
    try {
      return JSON.parse(text());
    } catch {
      return { status: answer.status, contentType: type, note: 'the body is not the JSON its content type says', text: text() };
    }
  }
  if (type.startsWith('text/') || type === 'application/xml' || type === 'application/x-www-form-urlencoded' || type === '') return text();
  return { status: answer.status, contentType: type, bytes: answer.body.length };
}

/** What the server said of a refusal, in one short line: a JSON body's message (or error, or detail), else its text. */
export function serverMessage(answer: HttpAnswer): string {
  let said = '';
  const body = answerBody(answer);
  if (typeof body === 'string') said = body;
  else if (typeof body === 'object' && body !== null) {
    const fields = body as Record<string, unknown>;
    const inner = typeof fields.error === 'object' && fields.error !== null ? (fields.error as Record<string, unknown>) : {};
    const candidate = fields.message ?? fields.detail ?? fields.title ?? inner.message ?? fields.error;
    said = typeof candidate === 'string' ? candidate : 'text' in fields ? String(fields.text) : JSON.stringify(body);
  }
  const line = said.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}
