import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { RawValue, rawValueTypeInfo, type Payload } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH } from '../../common/defaults';
import type { AgentTurnResult, TurnState } from '../../common/contract/turn';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { approvalSignal } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

const bytes = (text: string) => new TextEncoder().encode(text);

/** Payloads no decoder takes, each named for the test's messages: what a client that does not play by the rules can send. */
export const GARBAGE_PAYLOADS: Array<{ name: string; payload: Payload; why: RegExp }> = [
  { name: 'malformed JSON', payload: { metadata: { encoding: bytes('json/plain') }, data: bytes('{"callId":') }, why: /is not JSON/ },
  {
    name: 'an unknown encoding',
    payload: { metadata: { encoding: bytes('binary/evil') }, data: bytes('{}') },
    why: /"binary\/evil" is not json\/plain/,
  },
  {
    name: 'a sealed payload on a worker without keys',
    payload: { metadata: { encoding: bytes('binary/encrypted'), 'encryption-key-id': bytes('k1') }, data: new Uint8Array(64) },
    why: /"binary\/encrypted" is not json\/plain/,
  },
  { name: 'no encoding at all', payload: { data: bytes('{}') }, why: /"none" is not json\/plain/ },
  {
    name: 'bytes that are not UTF-8',
    payload: { metadata: { encoding: bytes('json/plain') }, data: Uint8Array.from([0x7b, 0xff, 0xfe, 0x7d]) },
    why: /not UTF-8/,
  },
  {
    name: 'an encoding that is not UTF-8',
    payload: { metadata: { encoding: Uint8Array.from([0xc3, 0x28]) }, data: bytes('{}') },
    why: /"not UTF-8" is not json\/plain/,
  },
  {
    name: 'a payload over the size bound',
    payload: { metadata: { encoding: bytes('json/plain') }, data: bytes(JSON.stringify({ callId: 'x'.repeat(MAX_MESSAGE_BYTES) })) },
    why: new RegExp(`at most ${MAX_MESSAGE_BYTES} are taken`),
  },
  {
    name: 'JSON nested deeper than the bound',
    payload: { metadata: { encoding: bytes('json/plain') }, data: bytes(`${'['.repeat(2_000)}${']'.repeat(2_000)}`) },
    why: new RegExp(`nests deeper than ${MAX_MESSAGE_DEPTH} levels`),
  },
  { name: 'JSON null', payload: { metadata: { encoding: bytes('json/plain') }, data: bytes('null') }, why: /must be an object/ },
  { name: 'a JSON number', payload: { metadata: { encoding: bytes('json/plain') }, data: bytes('42') }, why: /must be an object/ },
  { name: 'binary/null', payload: { metadata: { encoding: bytes('binary/null') } }, why: /must be an object/ },
];

/** The messages of `agentTurn` a person's decision comes by; every one of them is attacked. */
const SIGNALS = ['approval', 'resolve', 'resume'] as const;
const UPDATES = ['decide', 'resolve', 'resume'] as const;

function rawSignal(name: string) {
  return defineSignal<[RawValue]>(name, { typeInfo: { inputTypes: [rawValueTypeInfo] } });
}

function rawUpdate(name: string) {
  return defineUpdate<unknown, [RawValue]>(name, { typeInfo: { inputTypes: [rawValueTypeInfo] } });
}

/**
 * Workflow tasks that failed for another reason than UNHANDLED_COMMAND (the server's ordinary answer to a
 * task that completed while new signals had arrived: the worker takes them in a new task; nothing failed).
 */
const UNHANDLED_COMMAND: Array<string | number> = [
  'WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND',
  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
];

async function failedWorkflowTasks(handle: WorkflowHandle): Promise<string[]> {
  const { events } = await handle.fetchHistory();
  return (events ?? [])
    .map((event) => event.workflowTaskFailedEventAttributes)
    .filter((failed) => failed && !UNHANDLED_COMMAND.includes(failed.cause as unknown as string | number))
    .map((failed) => `${failed!.cause}: ${failed!.failure?.message ?? ''}`);
}

function outboxTurn(interact: (handle: WorkflowHandle) => Promise<void>) {
  const config = testConfig({});
  const send = sendMessageTool({ workspace: config.workspace });
  const outbox = path.join(config.workspace, 'outbox');
  const step = { toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } }] };
  const delivered = () =>
    existsSync(outbox) ? readdirSync(outbox, { recursive: true }).filter((name) => String(name).endsWith('.json')).length : 0;
  return runTurn({
    config,
    tools: [send],
    input: { prompt: 'x', model: scripted([step, { text: 'done' }]) },
    interact,
  }).then((run) => ({ ...run, delivered: delivered() }));
}

describe('message handlers of a turn, against payloads that do not decode', () => {
  it('records every garbage signal as rejected, refuses every garbage update, keeps answering, and takes the next valid decision', async () => {
    let failedTasks: string[] = ['not checked'];
    let otherTurn: AgentTurnResult | undefined;
    const { result, delivered, state } = await outboxTurn(async (handle) => {
      const waiting = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
      const { callId, argsDigest } = waiting.pendingApprovals[0];
      for (const { payload } of GARBAGE_PAYLOADS) {
        for (const name of SIGNALS) await handle.signal(rawSignal(name), RawValue.fromPayload(payload));
      }
      for (const { name: what, payload, why } of GARBAGE_PAYLOADS) {
        for (const name of UPDATES) {
          const failure = await handle.executeUpdate(rawUpdate(name), { args: [RawValue.fromPayload(payload)] }).catch((error) => error);
          expect(failure, `${name} with ${what}`).toBeInstanceOf(WorkflowUpdateFailedError);
          expect((failure as WorkflowUpdateFailedError).cause?.message, `${name} with ${what}`).toMatch(why);
        }
      }
      // A query with garbage arguments is answered too: the state query ignores its arguments undecoded.
      const queried = await handle.query(
        defineQuery<TurnState, [RawValue]>('state', { typeInfo: { inputTypes: [rawValueTypeInfo] } }),
        RawValue.fromPayload(GARBAGE_PAYLOADS[1].payload),
      );
      expect(queried.pendingApprovals).toHaveLength(1);
      const signals = GARBAGE_PAYLOADS.length * SIGNALS.length;
      const rejected = await waitForState(
        handle,
        (current) => current.rejectedDecisions.length + current.rejectedDecisionsDropped === signals,
      );
      expect(rejected.pendingApprovals).toEqual([expect.objectContaining({ callId, round: 1 })]);
      expect(rejected.decisions).toEqual([]);
      await handle.signal(approvalSignal, { callId, decision: 'approve', approver: 'lead', argsDigest });
      // Another turn on the same worker is served after all that (started once the decision is in: awaiting a
      // result lets the time-skipping server move time, which would otherwise run out the waiting turn's limits).
      otherTurn = await environment.env.client.workflow.execute('agentTurn', {
        workflowId: `${handle.workflowId}-other`,
        taskQueue: (await handle.describe()).taskQueue,
        args: [{ taskId: 'other', prompt: 'x', model: scripted([{ text: 'still here' }]) }],
      });
      await handle.result();
      failedTasks = await failedWorkflowTasks(handle);
    });
    expect(failedTasks).toEqual([]);
    expect(otherTurn).toMatchObject({ status: 'completed', answer: 'still here' });
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success', executions: 1 })]);
    expect(delivered).toBe(1);
    // What the record keeps of an undecodable message: its encoding and size and why, never its bytes.
    const undecodable = state.rejectedDecisions.filter((entry) => (entry.decision as { undecodable?: unknown } | null)?.undecodable);
    expect(undecodable.length).toBeGreaterThan(0);
    for (const entry of undecodable) {
      expect(entry.decision).toEqual({ undecodable: { encoding: expect.any(String), bytes: expect.any(Number) } });
      expect(entry.why.length).toBeLessThanOrEqual(300);
    }
    expect(state.rejectedDecisions.map((entry) => entry.why)).toEqual(
      expect.arrayContaining([expect.stringMatching(/nests deeper than/), expect.stringMatching(/must be an object/)]),
    );
  });
});
