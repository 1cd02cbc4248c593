import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtInTools } from '../../tools/built-in';
import type { ToolDefinition } from '../../tools/define-tool';
import { TollgateClient } from '../../client/tollgate-client';
import type { AgentTurnResult, ScriptStep } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { startDevServer, type DevServer, type DevServerOptions } from '../../server/dev-server';
import { freePort } from '../../connection/ports';
import { createWorker } from '../../worker/create-worker';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { scripted } from '../helpers/turn-runner';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-restart-'));
let serverOptions: DevServerOptions;
let server: DevServer;

beforeAll(async () => {
  quietRuntime();
  serverOptions = {
    address: `127.0.0.1:${await freePort()}`,
    namespace: 'default',
    dbFile: path.join(folder, 'temporal.db'),
    logFile: path.join(folder, 'server.log'),
  };
  server = await startDevServer(serverOptions);
});

afterAll(async () => {
  await server?.stop();
});

/** The built-in tools with every handler execution counted, by tool. */
function countedTools(config: TollgateConfig) {
  const counts = new Map<string, number>();
  const tools = builtInTools(config).map((tool): ToolDefinition => ({
    ...tool,
    handler: (args, context) => (counts.set(tool.name, (counts.get(tool.name) ?? 0) + 1), tool.handler(args, context)),
  }));
  return { tools, counts };
}

/** Three reads and one reversible write, then an answer. */
function fourCalls(turn: number): ScriptStep[] {
  return [
    {
      toolCalls: [
        { tool: 'search_local_sources', args: { query: 'refund' } },
        { tool: 'get_document', args: { id: 'refund-policy' } },
      ],
    },
    { toolCalls: [{ tool: 'get_document', args: { id: 'pricing-plans' } }] },
    { toolCalls: [{ tool: 'save_draft', args: { path: `turn-${turn}.md`, content: `draft ${turn}\n` } }] },
    { text: `turn ${turn} done` },
  ];
}

async function resultAfterOutages(config: TollgateConfig, workflowId: string): Promise<AgentTurnResult> {
  for (let tries = 0; ; tries++) {
    const client = await TollgateClient.connect(config).catch(() => undefined);
    try {
      if (client) return await client.result(workflowId);
    } catch (error) {
      if (tries > 60) throw error;
    } finally {
      await client?.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('the dev server restarted under 20 running turns', () => {
  it('completes every turn and loses nothing (persistent SQLite)', async () => {
    const taskQueue = `restart-${Date.now()}`;
    const config = testConfig({ temporal: { address: server.address, taskQueue } });
    const { tools, counts } = countedTools(config);
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools, workflowBundle: await bundleWorkflows() });
    const running = worker.run();
    const client = await TollgateClient.connect(config);
    const handles = [];
    for (let turn = 0; turn < 20; turn++)
      handles.push(await client.startTurn({ taskId: `restart-${turn}`, prompt: `turn ${turn}`, model: scripted(fourCalls(turn)) }));
    await client.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await server.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    server = await startDevServer(serverOptions);

    const results = await Promise.all(handles.map((handle) => resultAfterOutages(config, handle.workflowId)));
    worker.shutdown();
    await running;
    await connection.close();
    expect(results.map((result) => result.status)).toEqual(Array(20).fill('completed'));
    expect(
      readdirSync(path.join(config.workspace, 'drafts'), { recursive: true }).filter((name) => String(name).endsWith('.md')),
    ).toHaveLength(20);
    expect(counts.get('save_draft')).toBe(20);
    console.log(
      `restart test: 20 turns, all completed; reads run ${(counts.get('search_local_sources') ?? 0) + (counts.get('get_document') ?? 0)} times for 60 read calls`,
    );
  }, 300_000);
});

describe('load', () => {
  it('runs 200 concurrent turns of 4 tool calls on one worker, with exact counts', async () => {
    const taskQueue = `load-${Date.now()}`;
    const config = testConfig({ temporal: { address: server.address, taskQueue } });
    const { tools, counts } = countedTools(config);
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools, workflowBundle: await bundleWorkflows() });
    const client = await TollgateClient.connect(config);
    const started = Date.now();
    const results = await worker.runUntil(async () => {
      const handles = await Promise.all(
        Array.from({ length: 200 }, (_, turn) =>
          client.startTurn({ taskId: `load-${turn}`, prompt: `turn ${turn}`, model: scripted(fourCalls(turn)) }),
        ),
      );
      return Promise.all(handles.map((handle) => client.result(handle.workflowId)));
    });
    const seconds = (Date.now() - started) / 1000;
    await client.close();
    await connection.close();
    expect(results.filter((result) => result.status === 'completed')).toHaveLength(200);
    expect(
      results.every(
        (result) =>
          result.toolCalls.length === 4 && result.toolCalls.every((event) => event.status === 'success' && event.executions === 1),
      ),
    ).toBe(true);
    expect(Object.fromEntries(counts)).toEqual({ search_local_sources: 200, get_document: 400, save_draft: 200 });
    expect(
      readdirSync(path.join(config.workspace, 'drafts'), { recursive: true }).filter((name) => String(name).endsWith('.md')),
    ).toHaveLength(200);
    console.log(`load test: 200 turns, 800 tool calls, all completed in ${seconds.toFixed(1)} s (${(200 / seconds).toFixed(1)} turns/s)`);
  }, 600_000);
});
