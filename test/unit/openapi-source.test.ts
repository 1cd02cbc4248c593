import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openapiSchema } from '../../tools/openapi/openapi-config';
import { retryAfterMs } from '../../tools/openapi/openapi-http';
import { startOpenapiTools } from '../../tools/openapi/openapi-tool-source';
import { documentOperations, operationEffect, type ApiOperation } from '../../tools/openapi/openapi-operations';
import { buildRequest } from '../../tools/openapi/openapi-request';
import { compareWrittenFields } from '../../tools/openapi/openapi-field-compare';
import { SentPreconditions, strongEtag } from '../../tools/openapi/openapi-preconditions';

const source = (operations: Record<string, object> = {}, more: object = {}) =>
  openapiSchema.parse({ sources: { s: { document: 'x.yaml', operations, ...more } } }).sources.s;

function operationsOf(paths: Record<string, unknown>, schemas: Record<string, unknown> = {}, openapi = '3.1.0') {
  return documentOperations({ openapi, info: { title: 't', version: '1' }, paths, components: { schemas } }, { maxOperations: 100 });
}
const ok = { responses: { '200': { description: 'ok' } } };

describe('the effect of an operation', () => {
  const of = (method: string, overrides: Record<string, object> = {}, more: object = {}, extensions: object = {}) => {
    const { operations } = operationsOf({ '/x': { [method]: { operationId: 'op', ...ok, ...extensions } } });
    return operationEffect(operations[0], source(overrides, more));
  };

  it('is read for the safe methods and an irreversible write for every other, PUT and DELETE included', () => {
    expect(['get', 'head', 'options', 'put', 'delete', 'post', 'patch'].map((method) => [method, of(method)])).toEqual([
      ['get', 'read'],
      ['head', 'read'],
      ['options', 'read'],
      ['put', 'irreversible_write'],
      ['delete', 'irreversible_write'],
      ['post', 'irreversible_write'],
      ['patch', 'irreversible_write'],
    ]);
  });

  it("takes the config's word over the method, and the document's extension only from a trusted document", () => {
    expect(of('post', { op: { effect: 'read' } })).toBe('read');
    expect(of('post', {}, {}, { 'x-tollgate-effect': 'read' })).toBe('irreversible_write');
    expect(of('post', {}, { trustExtensions: true }, { 'x-tollgate-effect': 'read' })).toBe('read');
    expect(() => of('post', {}, { trustExtensions: true }, { 'x-tollgate-effect': 'harmless' })).toThrow(
      'operation op: x-tollgate-effect must be one of read, reversible_write, irreversible_write',
    );
  });
});

describe('the input schema of an operation', () => {
  it('turns an OpenAPI 3.0 schema into draft-07: nullable and boolean exclusive bounds, shared schemas under definitions', () => {
    const { operations } = operationsOf(
      {
        '/items/{id}': {
          put: {
            operationId: 'putItem',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 0, exclusiveMinimum: true } }],
            requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } },
            ...ok,
          },
        },
      },
      { Item: { type: 'object', properties: { label: { type: 'string', nullable: true } } } },
      '3.0.3',
    );
    expect(operations[0].inputSchema).toEqual({
      type: 'object',
      properties: { id: { type: 'integer', exclusiveMinimum: 0 }, body: { $ref: '#/definitions/Item' } },
      required: ['id'],
      additionalProperties: false,
      definitions: { Item: { type: 'object', properties: { label: { type: ['string', 'null'] } } } },
    });
  });

  it('leaves out what it cannot send, saying why', () => {
    const { operations, skipped } = operationsOf({
      '/a': { get: { operationId: 'cookie', parameters: [{ name: 'session', in: 'cookie', schema: { type: 'string' } }], ...ok } },
      '/b': { post: { operationId: 'upload', requestBody: { content: { 'image/png': { schema: {} } } }, ...ok } },
      '/c/{id}': { get: { operationId: 'unnamed', ...ok } },
      '/d': { get: { ...ok } },
      '/e': { get: { operationId: 'fine', ...ok } },
    });
    expect(operations.map((operation) => operation.operationId)).toEqual(['fine']);
    expect(skipped).toEqual([
      { operationId: 'cookie', reason: 'it takes a cookie parameter (session), which Tollgate does not send' },
      { operationId: 'upload', reason: 'its request body is image/png, and Tollgate sends JSON or a form' },
      { operationId: 'unnamed', reason: 'its path names {id}, which no path parameter declares' },
      { operationId: 'GET /d', reason: 'it has no operationId' },
    ]);
  });
});

describe('the request of a call', () => {
  const operation = (): ApiOperation =>
    operationsOf({
      '/orders/{id}': {
        post: {
          operationId: 'refund',
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'X-Reason', in: 'header', schema: { type: 'string' } },
            { name: 'Idempotency-Key', in: 'header', schema: { type: 'string' } },
          ],
          requestBody: { content: { 'application/json': { schema: { type: 'object' } } } },
          ...ok,
        },
      },
    }).operations[0];
  const base = new URL('http://api.test/v1');

  it('encodes path parameters, and puts the source headers and the intent key last, where no argument replaces them', () => {
    const request = buildRequest(
      operation(),
      { id: 'a/b c', 'X-Reason': 'late', body: { cents: 5 } },
      { baseURL: base, headers: { authorization: 'Bearer t' }, idempotencyKey: 'k1' },
    );
    expect(request.url.href).toBe('http://api.test/v1/orders/a%2Fb%20c');
    expect(request.headers).toMatchObject({
      'x-reason': 'late',
      authorization: 'Bearer t',
      'idempotency-key': 'k1',
      'content-type': 'application/json',
    });
    expect(request.body?.toString()).toBe('{"cents":5}');
  });

  it('refuses a path parameter that would leave the path, and a header value with a line break', () => {
    for (const id of ['..', '.', '']) {
      expect(() => buildRequest(operation(), { id }, { baseURL: base, headers: {} })).toThrow(
        `path parameter id may not be ${JSON.stringify(id)}`,
      );
    }
    expect(() => buildRequest(operation(), { id: 'a', 'X-Reason': 'x\r\nHost: evil' }, { baseURL: base, headers: {} })).toThrow(
      'header parameter X-Reason holds a line break',
    );
  });
});

describe('the values a request carries (RFC 9110 field values)', () => {
  const operation = (): ApiOperation =>
    operationsOf({
      '/things/{id}': {
        post: {
          operationId: 'postThing',
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'X-Note', in: 'header', schema: { type: 'string' } },
            { name: 'q', in: 'query', schema: { type: 'string' } },
          ],
          requestBody: { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object' } } } },
          ...ok,
        },
      },
    }).operations[0];
  const base = new URL('http://api.test');
  const build = (args: Record<string, unknown>, headers: Record<string, string> = {}) =>
    buildRequest(operation(), { id: 'a', ...args }, { baseURL: base, headers });

  it('refuses a header value holding any control character, DEL, a C1 control or a character above U+00FF, naming it by code point', () => {
    const refused: Array<[string, string]> = [
      ['a\u0001b', 'U+0001 at character 2'],
      ['\u0000', 'U+0000 at character 1'],
      ['x\u007f', 'U+007F at character 2'],
      ['\u0085', 'U+0085 at character 1'],
      ['caf\u0100', 'U+0100 at character 4'],
      ['\u202emoc.elpmaxe', 'U+202E at character 1'],
      ['ok \u{1F600}', 'U+1F600 at character 4'],
      ['a\u200bb', 'U+200B at character 2'],
    ];
    for (const [value, where] of refused) {
      expect(() => build({ 'X-Note': value })).toThrow(
        `header parameter X-Note holds ${where}, which an HTTP field value may not hold (RFC 9110 §5.5)`,
      );
    }
    expect(() => build({ 'X-Note': ' padded' })).toThrow('header parameter X-Note begins or ends with a space or tab');
    let code: string | undefined;
    try {
      build({ 'X-Note': 'a\u0001' });
    } catch (error) {
      code = (error as { code?: string }).code;
    }
    expect(code).toBe('invalid_arguments');
  });

  it('sends visible ASCII, inner spaces and tabs, and obs-text (U+00A0-U+00FF) as they are', () => {
    expect(build({ 'X-Note': 'late\tby two days, caf\u00e9' }).headers['x-note']).toBe('late\tby two days, caf\u00e9');
  });

  it("checks the source's own headers the same way, naming the header and never its value", () => {
    expect(() => build({}, { authorization: 'Bearer \u0001secret' })).toThrow(
      /^header authorization holds U\+0001 at character 8, which an HTTP field value may not hold/,
    );
  });

  it('refuses a control character or a lone surrogate in a path value, and a lone surrogate in a query or form value (UTF-8 would replace it)', () => {
    expect(() => build({ id: 'a\u0001' })).toThrow('path parameter id holds the control character U+0001 at character 2');
    expect(() => build({ id: 'x\ud800' })).toThrow(
      'path parameter id holds a lone surrogate (U+D800) at character 2, which UTF-8 cannot carry',
    );
    expect(() => build({ q: '\udfff' })).toThrow('query parameter q holds a lone surrogate (U+DFFF) at character 1');
    expect(() => build({ body: { note: 'a\ud83d' } })).toThrow('body field "note" holds a lone surrogate (U+D83D) at character 2');
    // Whole characters of any plane are fine in a path, a query and a body: they are percent-encoded as UTF-8.
    const request = build({ id: '\u2603\u{1F600}', q: '\u00e9', body: { note: '\u{1F600}' } });
    expect(request.url.pathname).toBe('/things/%E2%98%83%F0%9F%98%80');
    expect(request.url.search).toBe('?q=%C3%A9');
  });
});

describe('what a status GET says of the fields a write sent', () => {
  it('holds when every compared field is there, normalised as the config says on both sides', () => {
    const held = { id: 'C1', email: 'bob@example.com', name: 'Bob' };
    expect(compareWrittenFields({ email: ' Bob@Example.COM ' }, held, { email: ['trim', 'lowercase'] })).toBe('holds');
    expect(compareWrittenFields({ email: 'bob@example.com', name: 'Bob' }, held)).toBe('holds');
    expect(compareWrittenFields({ email: 'Caf\u0065\u0301' }, { email: 'caf\u00e9' }, { email: ['nfc', 'lowercase'] })).toBe('holds');
  });

  it('differs when a field differs, and is undecided when the answer lacks a field, is no object, or nothing is compared', () => {
    const held = { id: 'C1', email: 'bob@example.com' };
    expect(compareWrittenFields({ email: 'Bob@Example.com' }, held)).toBe('differs');
    expect(compareWrittenFields({ email: 'Bob@Example.com' }, held, { email: ['trim'] })).toBe('differs');
    expect(compareWrittenFields({ phone: '1' }, held)).toBe('undecided');
    expect(compareWrittenFields({ email: 'x' }, 'text')).toBe('undecided');
    // Only the declared fields are compared: a sent field the config does not name is not looked at.
    expect(compareWrittenFields({ name: 'Zed' }, held, { email: [] })).toBe('undecided');
    expect(compareWrittenFields({ name: 'Zed', email: 'bob@example.com' }, held, { email: [] })).toBe('holds');
  });
});

describe('the compare of a status check, as configured', () => {
  const document = {
    openapi: '3.1.0',
    info: { title: 't', version: '1' },
    servers: [{ url: 'http://api.test' }],
    paths: {
      '/customers/{id}': {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        get: { operationId: 'getCustomer', ...ok },
        patch: {
          operationId: 'updateCustomer',
          requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Change' } } } },
          ...ok,
        },
        delete: { operationId: 'deleteCustomer', ...ok },
      },
    },
    components: { schemas: { Change: { type: 'object', properties: { email: { type: 'string' }, name: { type: 'string' } } } } },
  };
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-openapi-compare-')), 'api.json');
  writeFileSync(file, JSON.stringify(document));
  const open = (operations: Record<string, object>) =>
    startOpenapiTools({ openapi: openapiSchema.parse({ sources: { api: { document: file, operations } } }), log: () => undefined });
  const where = 'openapi source "api": operation';

  it('serves a PATCH whose compare names fields its body declares (through a $ref)', async () => {
    const opened = await open({ updateCustomer: { effect: 'reversible_write', status: 'getCustomer', compare: { email: ['lowercase'] } } });
    expect(opened.tools.find((tool) => tool.name === 'api__updateCustomer')?.effect).toBe('reversible_write');
  });

  it('refuses a compare naming a field the body does not declare, one without a status, and one on a write without a body', async () => {
    await expect(open({ updateCustomer: { effect: 'reversible_write', status: 'getCustomer', compare: { mail: [] } } })).rejects.toThrow(
      `${where} updateCustomer: operations.updateCustomer.compare names mail, which its request body does not declare (it declares email, name)`,
    );
    await expect(open({ updateCustomer: { compare: { email: [] } } })).rejects.toThrow(
      `${where} updateCustomer: operations.updateCustomer.compare compares what its status GET answers, and it has no status`,
    );
    await expect(open({ deleteCustomer: { effect: 'reversible_write', status: 'getCustomer', compare: { email: [] } } })).rejects.toThrow(
      `${where} deleteCustomer: operations.deleteCustomer.compare compares the fields a PUT or PATCH sends, and this is a DELETE without a body`,
    );
    expect(() =>
      openapiSchema.parse({ sources: { api: { document: file, operations: { updateCustomer: { compare: { email: ['upper'] } } } } } }),
    ).toThrow();
  });

  it('refuses a headersFromEnv value HTTP cannot carry, naming the variable and never the value', async () => {
    const openapi = openapiSchema.parse({ sources: { api: { document: file, headersFromEnv: { Authorization: 'API_TOKEN' } } } });
    const refusal = startOpenapiTools({ openapi, log: () => undefined, env: { API_TOKEN: 'Bearer s3cret\u0001' } });
    await expect(refusal).rejects.toThrow(
      'openapi source "api": headersFromEnv.Authorization: the value of API_TOKEN holds U+0001 at character 14, which an HTTP field value may not hold',
    );
    await expect(refusal).rejects.not.toThrow(/s3cret/);
  });
});

describe('preconditions', () => {
  const answer = (etag?: string) => ({ status: 200, headers: etag === undefined ? {} : { etag }, body: Buffer.alloc(0) });

  it('takes a strong ETag only: never a weak one (If-Match never matches it) or a malformed one', () => {
    expect(strongEtag(answer('"v1"'))).toBe('"v1"');
    expect(strongEtag(answer('W/"v1"'))).toBeUndefined();
    expect(strongEtag(answer('v1'))).toBeUndefined();
    expect(strongEtag(answer('"a"b"'))).toBeUndefined();
    expect(strongEtag(answer())).toBeUndefined();
  });

  it('remembers the latest If-Match of each intent, forgets it on request, and the oldest first past its capacity', () => {
    const sent = new SentPreconditions(2);
    sent.remember('k1', '"1"');
    sent.remember('k2', '"2"');
    sent.remember('k1', '"1b"');
    sent.remember('k3', '"3"');
    expect([sent.sentWith('k1'), sent.sentWith('k2'), sent.sentWith('k3')]).toEqual(['"1b"', undefined, '"3"']);
    sent.forget('k1');
    expect(sent.sentWith('k1')).toBeUndefined();
  });
});

describe('Retry-After', () => {
  it('reads seconds and HTTP dates, and caps them', () => {
    const now = Date.parse('2026-12-04T12:00:00Z');
    expect(retryAfterMs('2', 30_000, now)).toBe(2_000);
    expect(retryAfterMs('3600', 30_000, now)).toBe(30_000);
    expect(retryAfterMs('Fri, 04 Dec 2026 12:00:05 GMT', 30_000, now)).toBe(5_000);
    expect(retryAfterMs('soon', 30_000, now)).toBeUndefined();
    expect(retryAfterMs(undefined, 30_000, now)).toBeUndefined();
  });
});
