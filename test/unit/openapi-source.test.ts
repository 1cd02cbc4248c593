import { describe, expect, it } from 'vitest';
import { openapiSchema } from '../../tools/openapi/openapi-config';
import { retryAfterMs } from '../../tools/openapi/openapi-http';
import { documentOperations, operationEffect, type ApiOperation } from '../../tools/openapi/openapi-operations';
import { buildRequest } from '../../tools/openapi/openapi-request';

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
