import { ToolError } from '../tool-error';
import type { HttpAnswer, HttpRequest } from './openapi-http';
import type { ApiOperation } from './openapi-operations';

/** A character as it is named in an error: its code point, never the character itself (it may be invisible or a control). */
function codePoint(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * Why a text cannot be an HTTP field value (RFC 9110 §5.5), or undefined when it can: a field value
 * is visible ASCII and obs-text (U+00A0-U+00FF, sent as one byte each), with spaces and tabs only
 * between them. Any other control character (C0, DEL, C1) or a character above U+00FF cannot be
 * sent at all, and a leading or trailing space would be dropped by the server, so it would read
 * another value than the one checked and approved.
 */
export function fieldValueProblem(text: string): string | undefined {
  const bad = /[^\t\x20-\x7e\xa0-\xff]/u.exec(text);
  if (bad) return `holds ${codePoint(bad[0])} at character ${bad.index + 1}, which an HTTP field value may not hold (RFC 9110 §5.5)`;
  if (/^[ \t]|[ \t]$/.test(text))
    return 'begins or ends with a space or tab, which a server drops from an HTTP field value (RFC 9110 §5.5)';
  return undefined;
}

/** Why a path parameter's text cannot be sent as it is: a control character, or a lone surrogate, which no URL can carry. */
function pathValueProblem(text: string): string | undefined {
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    // C0, DEL and C1: percent-encoded they would pass, and reach the server's path handling as control characters.
    if (unit <= 0x1f || (unit >= 0x7f && unit <= 0x9f))
      return `holds the control character ${codePoint(text[index])} at character ${index + 1}`;
  }
  return surrogateProblem(text);
}

/** Why a text cannot be sent as UTF-8 unchanged: a lone surrogate, which an encoder would replace by U+FFFD. */
function surrogateProblem(text: string): string | undefined {
  const lone = /\p{Surrogate}/u.exec(text);
  return lone ? `holds a lone surrogate (${codePoint(lone[0])}) at character ${lone.index + 1}, which UTF-8 cannot carry` : undefined;
}

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
      const problem = pathValueProblem(text);
      if (problem) throw new ToolError(`path parameter ${parameter.name} ${problem}`, 'invalid_arguments');
      path = path.split(`{${parameter.name}}`).join(encodeURIComponent(text));
    } else if (parameter.in === 'query') {
      const texts =
        Array.isArray(value) && parameter.explode ? value.map((item) => scalar(parameter.name, item)) : [scalar(parameter.name, value)];
      for (const text of texts) {
        const problem = surrogateProblem(text);
        if (problem) throw new ToolError(`query parameter ${parameter.name} ${problem}`, 'invalid_arguments');
        query.append(parameter.name, text);
      }
    } else {
      const text = scalar(parameter.name, value);
      if (/[\r\n]/.test(text)) throw new ToolError(`header parameter ${parameter.name} holds a line break`, 'invalid_arguments');
      const problem = fieldValueProblem(text);
      if (problem) throw new ToolError(`header parameter ${parameter.name} ${problem}`, 'invalid_arguments');
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
        if (value === undefined) continue;
        for (const text of Array.isArray(value) ? value.map((item) => scalar(key, item)) : [scalar(key, value)]) {
          const problem = surrogateProblem(key) ?? surrogateProblem(text);
          if (problem) throw new ToolError(`body field ${JSON.stringify(key)} ${problem}`, 'invalid_arguments');
          form.append(key, text);
        }
      }
      body = Buffer.from(form.toString());
      requestHeaders['content-type'] = 'application/x-www-form-urlencoded';
    }
  }
  for (const [name, value] of Object.entries(headers)) requestHeaders[name.toLowerCase()] = value;
  if (operation.idempotencyHeader && idempotencyKey) requestHeaders[operation.idempotencyHeader.toLowerCase()] = idempotencyKey;
  // Every header, the source's and the key too: whatever Node's client would refuse is refused here, before anything is sent.
  for (const [name, value] of Object.entries(requestHeaders)) {
    const problem = fieldValueProblem(value);
    if (problem) throw new ToolError(`header ${name} ${problem}`, 'invalid_arguments');
  }
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
