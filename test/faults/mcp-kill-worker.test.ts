import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import { AWAITING_APPROVAL_SEARCH_ATTRIBUTE } from '../../common/search-attributes';
import { freePort } from '../../connection/ports';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { approvalSignal, stateQuery } from '../../workflows/messages';
import { startMcpHttpFixture, type McpHttpFixture } from '../fixtures/mcp-http-server';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { scripted } from '../helpers/turn-runner';
import { killWorker, workerLine } from '../helpers/worker-processes';
import { roundOf } from '../../testing/round-of';

const KILLS = 10;
const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-mcp-kill-'));
let server: DevServer;
let fixture: McpHttpFixture;
let line: ReturnType<typeof workerLine> | undefined;

beforeAll(async () => {
  quietRuntime();
  const address = `127.0.0.1:${await freePort()}`;
  [server, fixture] = await Promise.all([
    startDevServer({ address, namespace: 'default', dbFile: path.join(folder, 'temporal.db'), logFile: path.join(folder, 'server.log') }),
    startMcpHttpFixture(),
  ]);
});

afterAll(async () => {
  await line?.stop();
  await fixture?.close();
  await server?.stop();
});

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a worker SIGKILLed during MCP writes', () => {
  it(`is killed ${KILLS} times with a write in flight, and no write runs twice`, async () => {
    const taskQueue = `mcp-kill-${Date.now()}`;
    const bundleFile = path.join(folder, 'workflows.js');
    writeFileSync(bundleFile, (await bundleWorkflows()).code);
    const settings = { address: server.address, taskQueue, sqliteFile: path.join(folder, 'idempotency.db'), bundleFile, url: fixture.url };
    const client = await TollgateClient.connect(testConfig({ temporal: { address: server.address, taskQueue } }));
    // Each replacement stands by before its predecessor is killed (test/helpers/worker-processes.ts).
    line = workerLine('mcp-worker', settings);
    try {
      // Every other write hangs until the worker dies; the others answer at once, and the kill may land before or after.
      fixture.plan('record_note', ...Array.from({ length: KILLS }, (_, index) => (index % 2 === 0 ? 'hang' : 'ok')));
      const script = [
        ...Array.from({ length: KILLS }, (_, index) => ({ toolCalls: [{ tool: 'shop__record_note', args: { note: `note ${index}` } }] })),
        { text: 'done' },
      ];
      const limits = { errorBudget: 20, maxSteps: 20 };
      // A worker killed mid-task leaves its workflow task to time out: 3 s, not the default 10 s, before the next worker takes it.
      const turn = await client.startTurn(
        { taskId: `mcp-kill-${Date.now()}`, prompt: 'x', model: scripted(script), limits },
        { workflowTaskTimeout: '3s' },
      );
      const handle = client.client.workflow.getHandle(turn.workflowId);
      for (let write = 0; write < KILLS; write++) {
        const worker = await line.next();
        // The server answers describe from the turn's search attributes; a query would replay the whole turn on a worker without a cache, every poll.
        await until(
          async () => (await handle.describe()).typedSearchAttributes.get(AWAITING_APPROVAL_SEARCH_ATTRIBUTE) === true,
          `write ${write} waits for approval`,
        );
        const [pending] = (await handle.query(stateQuery)).pendingApprovals;
        await handle.signal(approvalSignal, {
          callId: pending.callId,
          decision: 'approve',
          argsDigest: pending.argsDigest,
          ...roundOf(pending),
        });
        await until(() => fixture.executions.record_note > write, `write ${write} reached the server`);
        await killWorker(worker);
      }
      await line.next();
      const result = await client.result(turn.workflowId);
      expect(result.status).toBe('completed');
      const writes = result.toolCalls.filter((event) => event.tool === 'shop__record_note');
      expect(writes).toHaveLength(KILLS);
      for (const event of writes) {
        expect(event.executions).toBeLessThanOrEqual(1);
        if (event.status !== 'success') expect(event.code).toBe('outcome_unknown');
      }
      expect(fixture.executions.record_note).toBe(KILLS);
      expect(fixture.notes).toEqual(Array.from({ length: KILLS }, (_, index) => `note ${index}`));
    } finally {
      await client.close();
      await line.stop();
    }
  }, 300_000);
});
