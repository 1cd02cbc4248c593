import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient, type ApprovalInboxEntry } from '../../client/tollgate-client';
import type { TruncatedDecision } from '../../common/contract/decisions';
import type { AgentTurnResult, TurnState } from '../../common/contract/turn';
import { freePort } from '../../connection/ports';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { createWorker } from '../../worker/create-worker';
import { MAX_DECISION_CHARS, MAX_SEND_TEXT_CHARS, REJECTED_DECISION_BOUNDS } from '../../common/defaults';
import { approvalSignal, closeConversationSignal, decideUpdate, sendUpdate } from '../../workflows/messages';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';

let server: DevServer;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  quietRuntime();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bounds-'));
  [server, workflowBundle] = await Promise.all([
    freePort().then((port) =>
      startDevServer({
        address: `127.0.0.1:${port}`,
        namespace: 'default',
        dbFile: path.join(folder, 'temporal.db'),
        logFile: path.join(folder, 'server.log'),
      }),
    ),
    bundleWorkflows(),
  ]);
});

afterAll(async () => {
  await server?.stop();
});

async function waitFor(read: () => Promise<TurnState>, ready: (state: TurnState) => boolean, timeoutMs = 60_000): Promise<TurnState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await read();
    if (ready(state)) return state;
    if (Date.now() > deadline) throw new Error(`the turn's state never became ready (${JSON.stringify(state).length} characters)`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('bounds on what senders can make a workflow keep', () => {
  it('keeps the newest 20 rejected decisions, each under 1 KB, after 200 large forged signals; inbox and approval work', async () => {
    const config = testConfig({ temporal: { address: server.address, taskQueue: `bounds-${randomUUID()}` } });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools: [sendMessageTool({ workspace: config.workspace })], workflowBundle });
    const client = await TollgateClient.connect(config);
    const script = [{ toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } }] }, { text: 'sent' }];
    const { state, inbox, result } = await worker.runUntil(async () => {
      const turn = await client.startTurn({ taskId: 'flooded', prompt: 'Send it.', model: { provider: 'scripted', script } });
      await waitFor(
        () => client.state(turn.workflowId),
        (current) => current.pendingApprovals.length > 0,
      );
      const handle = client.client.workflow.getHandle(turn.workflowId);
      // 200 signals of about 40 KB each: 8 MB sent, more than a query answer may carry had they been kept.
      for (let batch = 0; batch < 10; batch++) {
        await Promise.all(
          Array.from({ length: 20 }, (_, index) =>
            handle.signal(approvalSignal, {
              callId: `forged-${batch}-${index}-${'x'.repeat(20_000)}`,
              decision: 'approve',
              reason: 'y'.repeat(20_000),
            }),
          ),
        );
      }
      const seenAll = (current: TurnState) => current.rejectedDecisions.length + current.rejectedDecisionsDropped === 200;
      const flooded = await waitFor(() => client.state(turn.workflowId), seenAll);
      const waiting = await client.inbox();
      const mine = waiting.find((entry) => entry.workflowId === turn.workflowId && entry.kind === 'approval') as ApprovalInboxEntry;
      await client.approve(turn.workflowId, mine.callId, { argsDigest: mine.argsDigest });
      return { state: flooded, inbox: waiting, result: await client.result(turn.workflowId) };
    });
    expect(state.rejectedDecisions).toHaveLength(REJECTED_DECISION_BOUNDS.kept);
    expect(state.rejectedDecisionsDropped).toBe(200 - REJECTED_DECISION_BOUNDS.kept);
    expect(JSON.stringify(state).length).toBeLessThan(64 * 1024);
    for (const rejected of state.rejectedDecisions) {
      const kept = rejected.decision as TruncatedDecision;
      expect(kept).toMatchObject({ truncated: true, jsonChars: expect.any(Number) });
      expect(kept.jsonChars).toBeGreaterThan(40_000);
      expect(kept.json).toHaveLength(REJECTED_DECISION_BOUNDS.decisionChars);
      expect(rejected.why.length).toBeLessThanOrEqual(300);
      expect(rejected.why).toMatch(/^no call forged-/);
    }
    // The newest ones are kept: the last batch is among them.
    expect(state.rejectedDecisions.at(-1)!.why).toMatch(/^no call forged-9-/);
    expect(inbox.filter((entry) => entry.taskId === 'flooded')).toHaveLength(1);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success' })]);
    await client.close();
    await connection.close();
  });

  it('refuses a decide update over the decision bound before it reaches the history, and records an oversized signal cut short', async () => {
    const config = testConfig({ temporal: { address: server.address, taskQueue: `bounds-${randomUUID()}` } });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools: [sendMessageTool({ workspace: config.workspace })], workflowBundle });
    const client = await TollgateClient.connect(config);
    const script = [{ toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } }] }, { text: 'sent' }];
    await worker.runUntil(async () => {
      const turn = await client.startTurn({ taskId: 'oversized', prompt: 'Send it.', model: { provider: 'scripted', script } });
      const waiting = await waitFor(
        () => client.state(turn.workflowId),
        (current) => current.pendingApprovals.length > 0,
      );
      const { callId, argsDigest } = waiting.pendingApprovals[0];
      const handle = client.client.workflow.getHandle(turn.workflowId);
      const before = (await handle.describe()).raw.workflowExecutionInfo!;
      const oversized = { callId, decision: 'approve' as const, argsDigest, reason: 'z'.repeat(MAX_DECISION_CHARS) };
      const refused = await handle.executeUpdate(decideUpdate, { args: [oversized] }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((refused as WorkflowUpdateFailedError).cause?.message).toMatch(
        new RegExp(`^the decision is \\d+ characters of JSON; at most ${MAX_DECISION_CHARS} are taken$`),
      );
      // A refused update leaves no event: the history did not take its quarter of a megabyte.
      const after = (await handle.describe()).raw.workflowExecutionInfo!;
      expect(Number(after.historySizeBytes) - Number(before.historySizeBytes)).toBeLessThan(4_096);
      // The same decision as a signal is recorded by the server, but the turn rejects it and keeps it cut short.
      await handle.signal(approvalSignal, oversized);
      const flagged = await waitFor(
        () => client.state(turn.workflowId),
        (current) => current.rejectedDecisions.length > 0,
      );
      expect(flagged.rejectedDecisions[0].why).toMatch(/^the decision is \d+ characters of JSON/);
      expect((flagged.rejectedDecisions[0].decision as TruncatedDecision).json).toHaveLength(REJECTED_DECISION_BOUNDS.decisionChars);
      expect(flagged.pendingApprovals).toHaveLength(1);
      await client.deny(turn.workflowId, callId, { argsDigest, reason: 'checked' });
      expect((await client.result(turn.workflowId)).toolCalls[0]).toMatchObject({ status: 'denied', executions: 0 });
    });
    await client.close();
    await connection.close();
  });

  it('ends a turn flooded by signals while it waits with history_limit, the waiting call not run, before the server would terminate it', async () => {
    const config = testConfig({ temporal: { address: server.address, taskQueue: `bounds-${randomUUID()}` } });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools: [sendMessageTool({ workspace: config.workspace })], workflowBundle });
    const client = await TollgateClient.connect(config);
    const script = [{ toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } }] }, { text: 'sent' }];
    const maxHistoryBytes = 3_000_000;
    const { result, described } = await worker.runUntil(async () => {
      const turn = await client.startTurn({
        taskId: 'flooded-history',
        prompt: 'Send it.',
        model: { provider: 'scripted', script },
        limits: { maxHistoryBytes },
      });
      await waitFor(
        () => client.state(turn.workflowId),
        (current) => current.pendingApprovals.length > 0,
      );
      const handle = client.client.workflow.getHandle(turn.workflowId);
      // Signals of 200 KB each, under the decision bound: each one is recorded, none is taken.
      let sent = 0;
      for (; sent < 40; sent++) {
        const answer = await handle
          .signal(approvalSignal, { callId: `forged-${sent}`, decision: 'approve', reason: 'f'.repeat(200_000) })
          .catch((error: unknown) => error);
        if (answer instanceof Error) break; // the turn has ended: the server takes no more signals
      }
      const ended = await client.result(turn.workflowId);
      return { result: ended, described: await handle.describe() };
    });
    expect(result.status).toBe('history_limit');
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'error', code: 'not_run', executions: 0 })]);
    expect(described.status.name).toBe('COMPLETED');
    const size = Number(described.raw.workflowExecutionInfo!.historySizeBytes);
    expect(size).toBeGreaterThanOrEqual(maxHistoryBytes);
    // Signals sent while the turn was closing still land, but the history stays far from the 50 MB at
    // which the server would terminate the turn.
    expect(size).toBeLessThan(10_000_000);
    await client.close();
    await connection.close();
  });

  it('rejects a send over 100,000 characters with a clear message, and takes the next one', async () => {
    const config = testConfig({ temporal: { address: server.address, taskQueue: `bounds-${randomUUID()}` } });
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, workflowBundle });
    const client = await TollgateClient.connect(config);
    const conversationId = `conversation-${randomUUID()}`;
    await worker.runUntil(async () => {
      const handle = await client.client.workflow.start('conversation', {
        workflowId: conversationId,
        taskQueue: config.temporal.taskQueue,
        args: [{ conversationId, model: { provider: 'scripted', script: [{ text: 'noted' }] } }],
      });
      const tooLong = 'x'.repeat(MAX_SEND_TEXT_CHARS + 1);
      const oversized = await handle.executeUpdate(sendUpdate, { args: [{ text: tooLong }] }).catch((error: unknown) => error);
      expect(oversized).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((oversized as WorkflowUpdateFailedError).cause?.message).toBe(
        `send: text is ${MAX_SEND_TEXT_CHARS + 1} characters long; at most ${MAX_SEND_TEXT_CHARS} are taken`,
      );
      const answered = (await handle.executeUpdate(sendUpdate, { args: [{ text: 'hello' }] })) as AgentTurnResult;
      expect(answered.answer).toBe('noted');
      await handle.signal(closeConversationSignal);
      expect(await handle.result()).toMatchObject({ closed: true, turns: 1 });
    });
    await client.close();
    await connection.close();
  });
});
