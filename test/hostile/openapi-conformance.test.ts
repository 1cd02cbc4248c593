import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRunTool } from '../../activities/boundary/run-tool';
import { WRITE_INTERRUPTED } from '../../common/activity-types';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { ToolDefinition } from '../../tools/define-tool';
import type { OpenapiConfigInput } from '../../tools/openapi/openapi-config';
import { openapiToolSource } from '../../tools/openapi/openapi-tool-source';
import { createToolRegistry } from '../../tools/tool-registry';
import { openToolSources } from '../../tools/tool-source';
import { startShopFixture, type ShopFixture } from '../fixtures/openapi-shop-server';
import { compileOutsideSchema } from '../../tools/json-schema/outside-schema';
import { eventLoopProbe } from '../helpers/event-loop-probe';
import { eventLoopWorkProbe, expectLive } from '../helpers/event-loop-work-probe';
import { dagLevels, deepJsonText, nestedArrays } from '../helpers/schema-probes';
import { runToolOnce } from '../helpers/run-tool-once';
import { testConfig } from '../helpers/test-config';

/** The longest the event loop may stall in any case here: about liveness (a backtracking match stalls it for seconds). */
const MAX_STALL_MS = 500;
/** How much the worker's memory may grow while a server sends without end: far below reading it whole. */
const MAX_GROWTH_BYTES = 64 * 1024 * 1024;
const TOKEN = 'hostile-token-5d1e8b77a0';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
function memoryBytes(): number {
  collectGarbage();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external + usage.arrayBuffers;
}

let shop: ShopFixture;
const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-openapi-hostile-'));
beforeAll(async () => {
  shop = await startShopFixture();
});
afterEach(() => shop.reset());
afterAll(async () => {
  await shop?.close();
});

/** Writes a document to a file of its own; its path. */
function documentFile(document: unknown, name = `${randomUUID()}.json`): string {
  const file = path.join(folder, name);
  writeFileSync(file, typeof document === 'string' ? document : JSON.stringify(document));
  return file;
}

/** Opens these APIs as a worker does, through the tool source seam; the tools and the log lines. */
async function openApis(sources: OpenapiConfigInput['sources']) {
  const lines: string[] = [];
  const opened = await openToolSources([openapiToolSource({ sources })], {
    config: testConfig(),
    log: (line) => lines.push(line),
    env: { SHOP_AUTH: `Bearer ${TOKEN}` },
  });
  return { tools: opened.tools, lines, byName: (name: string) => opened.tools.find((tool) => tool.name === name)! };
}

/** The real boundary (registry, SQLite intent store, runTool) over these tools. */
function boundary(tools: ToolDefinition[]) {
  const registry = createToolRegistry({ tools });
  const store = openSqliteStore(':memory:');
  const runTool = createRunTool({ registry, store });
  const call = (tool: string, args: unknown, taskId = `task-${randomUUID()}`) =>
    runToolOnce(runTool, {
      taskId,
      callId: `call-${randomUUID()}`,
      tool,
      args,
      definitionDigest: registry.get(tool)?.source?.definitionDigest,
    });
  return { store, call };
}

/** A minimal valid document around these paths and component schemas. */
function api(paths: Record<string, unknown>, schemas: Record<string, unknown> = {}, version = '3.1.0') {
  return { openapi: version, info: { title: 'hostile', version: '1' }, servers: [{ url: shop.url }], paths, components: { schemas } };
}
const getWith = (operationId: string, schema: unknown) => ({
  get: {
    operationId,
    parameters: [{ name: 'q', in: 'query', required: true, schema }],
    responses: { '200': { description: 'ok' } },
  },
});

describe('hostile OpenAPI documents', () => {
  it('refuses a document longer than maxDocumentBytes, naming the cap, having read no more than it', async () => {
    const huge = documentFile(JSON.stringify(api({ '/x': getWith('x', { type: 'string', description: 'y'.repeat(3 * 1024 * 1024) }) })));
    await expect(openApis({ big: { document: huge, maxDocumentBytes: 1024 * 1024 } })).rejects.toThrow(
      `openapi source "big": the document ${huge}: the document is longer than maxDocumentBytes (1048576 bytes)`,
    );
  });

  it('serves recursive schemas (a tree of itself, and two schemas referring to each other) and checks deep input without stalling', async () => {
    const document = documentFile(
      api(
        {
          '/tree': {
            post: {
              operationId: 'postTree',
              requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } },
              responses: { '200': { description: 'ok' } },
            },
          },
        },
        {
          Node: {
            type: 'object',
            properties: {
              name: { type: 'string' },
              children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
              other: { $ref: '#/components/schemas/Other' },
            },
            additionalProperties: false,
          },
          Other: { type: 'object', properties: { back: { $ref: '#/components/schemas/Node' } } },
        },
      ),
    );
    const { byName } = await openApis({ rec: { document } });
    const tool = byName('rec__postTree');
    let deep: Record<string, unknown> = { name: 'leaf' };
    for (let depth = 0; depth < 200; depth++) deep = { name: `n${depth}`, children: [deep], other: { back: { name: 'b' } } };
    const probe = eventLoopProbe();
    expect(tool.input.safeParse({ body: deep }).success).toBe(true);
    expect(tool.input.safeParse({ body: { name: 'x', children: [{ name: 1 }] } }).success).toBe(false);
    expect(probe.stop()).toBeLessThan(MAX_STALL_MS);
  });

  it('checks a backtracking pattern on a linear-time engine: the event loop stays live, the call refused before any request', async () => {
    const document = documentFile(api({ '/slug': getWith('getSlug', { type: 'string', pattern: '^(a+)+$' }) }));
    const { tools } = await openApis({ bt: { document, baseURL: shop.url } });
    const { call } = boundary(tools);
    const probe = eventLoopProbe();
    expect(await call('bt__getSlug', { q: `${'a'.repeat(5_000)}!` })).toMatchObject({
      status: 'error',
      code: 'invalid_arguments',
      executions: 0,
    });
    expect(probe.stop()).toBeLessThan(MAX_STALL_MS);
    expect(shop.requests).toHaveLength(0);
  });

  it('stops at maxOperations before turning any operation into a tool, and serves one chosen operation of 10,000 when allowed', async () => {
    const paths = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, index) => [`/op${index}`, getWith(`op${index}`, { type: 'string' })]),
    );
    const document = documentFile(api(paths));
    await expect(openApis({ many: { document } })).rejects.toThrow(
      `openapi source "many": the document ${document}: the document declares more than maxOperations (1000) operations`,
    );
    const started = Date.now();
    const { tools } = await openApis({ many: { document, maxOperations: 10_000, include: ['op9999'] } });
    expect(tools.map((tool) => tool.name)).toEqual(['many__op9999']);
    console.log(`openapi: a document of 10,000 operations read, checked and one served in ${Date.now() - started} ms`);
  });

  it('follows no reference outside the document: the operation is left out, saying why, and one named in include stops the source', async () => {
    const document = documentFile(
      api({
        '/ext': getWith('getExternal', { $ref: 'http://127.0.0.1:1/schema.json' }),
        '/fine': getWith('getFine', { type: 'string' }),
      }),
    );
    const { tools, lines } = await openApis({ ext: { document } });
    expect(tools.map((tool) => tool.name)).toEqual(['ext__getFine']);
    expect(lines).toEqual([
      'openapi source "ext": operation getExternal is left out: a schema refers to "http://127.0.0.1:1/schema.json"; only the document\'s own components.schemas are followed',
    ]);
    await expect(openApis({ ext: { document, include: ['getExternal'] } })).rejects.toThrow('operation getExternal is left out');
  });

  it('refuses what is not an OpenAPI document, naming the source and the reason', async () => {
    await expect(openApis({ bad: { document: documentFile("swagger: '2.0'\n", 'swagger.yaml') } })).rejects.toThrow(
      'it is a Swagger 2.0 document; an OpenAPI 3.0 or 3.1 document is needed',
    );
    const invalid = documentFile({
      openapi: '3.1.0',
      info: { title: 'x' },
      paths: { '/x': { get: { operationId: 'x', responses: 'none' } } },
    });
    await expect(openApis({ bad: { document: invalid } })).rejects.toThrow(
      /openapi source "bad": the document .*: it is not a valid OpenAPI document/,
    );
    const yamlBomb = documentFile(
      `openapi: 3.1.0\na: &a [x, x, x, x, x, x, x, x, x, x]\n${Array.from({ length: 120 }, (_, index) => `b${index}: &b${index} [*${index === 0 ? 'a' : `b${index - 1}`}, *${index === 0 ? 'a' : `b${index - 1}`}]`).join('\n')}\n`,
      'bomb.yaml',
    );
    await expect(openApis({ bomb: { document: yamlBomb } })).rejects.toThrow(/it is neither JSON nor YAML: .*alias/i);
  });
});

describe('OpenAPI documents whose schemas make a validator work without end (the DAG probe in components.schemas)', () => {
  // The validators' first use in a process loads them and their meta-schemas: a cost of the worker's start, whatever the document.
  beforeAll(async () => {
    compileOutsideSchema({ type: 'object' });
    await openApis({ warm: { document: documentFile(api({ '/x': getWith('x', { type: 'string' }) })) } });
  });
  const postBody = (operationId: string, ref: string) => ({
    post: {
      operationId,
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: ref } } } },
      responses: { '200': { description: 'ok' } },
    },
  });

  for (const depth of [18, 23, 30, 40]) {
    it(`stops the start at ${depth} levels (${depth <= 23 ? 'before: seconds to minutes' : 'a 2.5 KB document'}), naming the source, the operation and the bound, the event loop live`, async () => {
      const document = documentFile(
        api({ '/dag': postBody('postDag', '#/components/schemas/L0') }, dagLevels(depth, '#/components/schemas/')),
      );
      const probe = eventLoopWorkProbe();
      await expect(openApis({ dag: { document } })).rejects.toThrow(
        'openapi source "dag": operation postDag: the input schema is over its work budget: applying it once follows its references to more than 100000 nodes (maxExpandedWork)',
      );
      expectLive(probe.stop());
    });
  }

  it('reads a document holding the probe (40 levels) that no served operation uses in no time, and serves the others', async () => {
    const document = documentFile(
      api(
        { '/dag': postBody('postDag', '#/components/schemas/L0'), '/fine': getWith('getFine', { type: 'string' }) },
        dagLevels(40, '#/components/schemas/'),
      ),
    );
    const probe = eventLoopWorkProbe();
    const { tools } = await openApis({ dag: { document, exclude: ['postDag'] } });
    expectLive(probe.stop());
    expect(tools.map((tool) => tool.name)).toEqual(['dag__getFine']);
  });

  it('refuses a document nested 5,000 levels deep, or whose own reference names nothing, with one line and no stack overflow', async () => {
    const shallow = JSON.stringify(api({ '/x': getWith('x', { type: 'string' }) }));
    const deep = documentFile(`${shallow.slice(0, -1)},"x-deep":${deepJsonText(5_000)}}`);
    await expect(openApis({ deep: { document: deep } })).rejects.toThrow(
      /openapi source "deep": the document .*: it is over the bounds of a document: it nests deeper than 128 levels/,
    );
    const dangling = documentFile(api({ '/x': getWith('x', { $ref: '#/components/schemas/Missing' }) }));
    await expect(openApis({ dangling: { document: dangling } })).rejects.toThrow(
      'its $ref "#/components/schemas/Missing" names nothing in the document',
    );
  });

  it('checks a body against the probe folded into one recursive level: a tree 40 deep is invalid_arguments with no request sent, the next call is sent', async () => {
    const document = documentFile(
      api(
        { '/tree': postBody('postTree', '#/components/schemas/Tree'), '/fine': getWith('getFine', { type: 'string' }) },
        { Tree: { type: 'array', items: { allOf: [{ $ref: '#/components/schemas/Tree' }, { $ref: '#/components/schemas/Tree' }] } } },
      ),
    );
    const { tools, byName } = await openApis({ tree: { document, baseURL: shop.url } });
    const { call } = boundary(tools);
    const probe = eventLoopWorkProbe();
    const verdicts: boolean[] = [];
    for (let depth = 1; depth <= 40; depth++) {
      verdicts.push(byName('tree__postTree').input.safeParse({ body: nestedArrays(depth) }).success);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const refused = await call('tree__postTree', { body: nestedArrays(40) });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expectLive(probe.stop());
    expect(verdicts.slice(0, 10).every(Boolean)).toBe(true);
    expect(verdicts.slice(30).some(Boolean)).toBe(false);
    expect(refused).toMatchObject({ status: 'error', code: 'invalid_arguments', executions: 0 });
    expect(refused.status === 'error' && refused.message).toMatch(/checking it would visit more than 250000 schema nodes \(maxCheckWork\)/);
    expect(shop.requests).toHaveLength(0);
    expect(await call('tree__getFine', { q: 'x' })).toMatchObject({ executions: 1 });
    expect(shop.requests).toHaveLength(1);
  });
});

describe('a hostile API server', () => {
  it('sending without end: the body cut at maxResponseBytes, the read fails transiently, memory bounded, the next call served', async () => {
    const document = documentFile(shop.document);
    const { tools } = await openApis({ shop: { document, include: ['getEndless', 'getOrder'], maxResponseBytes: 2 * 1024 * 1024 } });
    const { call } = boundary(tools);
    const before = memoryBytes();
    const probe = eventLoopProbe();
    await expect(call('shop__getEndless', {})).rejects.toMatchObject({
      type: 'transient_failure',
      message: expect.stringMatching(/passed maxResponseBytes \(2097152 bytes\)/),
    });
    expect(probe.stop()).toBeLessThan(MAX_STALL_MS);
    expect(memoryBytes() - before).toBeLessThan(MAX_GROWTH_BYTES);
    expect(shop.count('getEndless')).toBe(1);
    expect(await call('shop__getOrder', { id: 'A1' })).toMatchObject({ status: 'success', data: { id: 'A1', status: 'shipped' } });
  });

  it('sending without end to a write: outcome_unknown (write_interrupted), the intent kept', async () => {
    const endlessWrite = {
      ...shop.document,
      paths: { '/endless': { post: { operationId: 'postEndless', responses: { '200': { description: 'x' } } } } },
    };
    // The server answers any method of /endless without end; the document calls it a POST.
    const { tools } = await openApis({ shop: { document: documentFile(endlessWrite), maxResponseBytes: 1024 * 1024 } });
    const { store, call } = boundary(tools);
    const taskId = `endless-${randomUUID()}`;
    await expect(call('shop__postEndless', {}, taskId)).rejects.toMatchObject({ type: WRITE_INTERRUPTED });
    expect((await store.listTask(taskId)).map((intent) => intent.state)).toEqual(['started']);
  });

  it('asking to be retried later: the next attempt of the read waits the Retry-After, capped at maxRetryAfter', async () => {
    const { tools } = await openApis({ shop: { document: documentFile(shop.document), include: ['getStock'], maxRetryAfter: '500ms' } });
    const { call } = boundary(tools);
    shop.plan('getStock', 'unavailable', 'unavailable');
    await expect(call('shop__getStock', { sku: 'chair' })).rejects.toMatchObject({ type: 'transient_failure', nextRetryDelay: 500 });
    const { tools: uncapped } = await openApis({ shop: { document: documentFile(shop.document), include: ['getStock'] } });
    await expect(boundary(uncapped).call('shop__getStock', { sku: 'chair' })).rejects.toMatchObject({ nextRetryDelay: 1000 });
  });

  it('saying JSON and sending HTML: the text is given as it came, cut to the output bound', async () => {
    const { tools } = await openApis({ shop: { document: documentFile(shop.document), include: ['getWrongType'] } });
    const { call } = boundary(tools);
    expect(await call('shop__getWrongType', {})).toMatchObject({
      status: 'success',
      data: {
        status: 200,
        contentType: 'application/json',
        note: 'the body is not the JSON its content type says',
        text: '<html><body>Order A1 has shipped</body></html>',
      },
    });
  });

  it('redirecting to another host: never followed, the token never sent there, for a read and for a write', async () => {
    const withWrite = {
      ...shop.document,
      paths: {
        ...(shop.document.paths as object),
        '/moved-write': { post: { operationId: 'postMoved', responses: { '302': { description: 'x' } } } },
      },
    };
    const { tools } = await openApis({
      shop: { document: documentFile(withWrite), include: ['getMoved', 'postMoved'], headersFromEnv: { Authorization: 'SHOP_AUTH' } },
    });
    const { call } = boundary(tools);
    expect(await call('shop__getMoved', {})).toMatchObject({ status: 'error', code: 'tool_failure' });
    // A write answered with a redirect may have been done (a 303 after a POST says so): its outcome is unknown.
    await expect(call('shop__postMoved', {})).rejects.toMatchObject({ type: WRITE_INTERRUPTED });
    expect(shop.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]);
    expect(shop.elsewhere.requests).toEqual([]);
  });

  it('echoing the token in a refusal: the model sees it redacted', async () => {
    const echo = http.createServer((request, response) => {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ message: `bad token ${request.headers.authorization}` }));
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
      const document = documentFile(api({ '/echo': getWith('getEcho', { type: 'string' }) }));
      const { tools } = await openApis({ echo: { document, baseURL: url, headersFromEnv: { Authorization: 'SHOP_AUTH' } } });
      const { call } = boundary(tools);
      const result = await call('echo__getEcho', { q: 'x' });
      expect(result).toMatchObject({
        status: 'error',
        code: 'invalid_arguments',
        message: 'echo getEcho answered 400: bad token [redacted]',
      });
      expect(JSON.stringify(result)).not.toContain(TOKEN);
    } finally {
      await new Promise((resolve) => echo.close(resolve));
    }
  });

  it('refusing the connection: a write that was never sent is a transient failure, its intent released', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const { tools } = await openApis({ gone: { document: documentFile(shop.document), baseURL: url, include: ['createCharge'] } });
    const { store, call } = boundary(tools);
    const taskId = `refused-${randomUUID()}`;
    expect(await call('gone__createCharge', { body: { cents: 1 } }, taskId)).toMatchObject({
      status: 'error',
      code: 'transient_failure',
      executions: 1,
    });
    expect(await store.listTask(taskId)).toEqual([]);
  });
});
