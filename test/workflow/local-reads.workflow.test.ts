// Reads as local activities (config temporal.worker.localReads): the same boundary, attempts and
// backoff, run inside the workflow task that asks for them; writes and reads with a heartbeat
// timeout stay activities. What an attacker or an outage would try: a read that fails or hangs
// (retried within its bound, never past it), a worker whose registry differs (refused as before).
import { CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../tools/define-tool';
import type { TollgateConfig } from '../../config/config-schema';
import { builtInTools } from '../../tools/built-in';
import { createToolRegistry } from '../../tools/tool-registry';
import { testConfig } from '../helpers/test-config';
import { scripted, useTurnRunner } from '../helpers/turn-runner';
import { connectionReset, countingRead } from '../helpers/counting-read';

const runTurn = useTurnRunner();

function localReadsConfig(localReads = true): TollgateConfig {
  const base = testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' } });
  return { ...base, temporal: { ...base.temporal, worker: { ...base.temporal.worker, localReads } } };
}

/** The local activity markers of runTool in a history, and the runTool activities scheduled. */
function dispatch(history: { events?: unknown[] | null }) {
  const events = (history.events ?? []) as Array<{
    markerRecordedEventAttributes?: {
      markerName?: string | null;
      details?: Record<string, { payloads?: Array<{ data?: Uint8Array | null }> | null }> | null;
    };
    activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null };
  }>;
  const localRunTools = events.filter((event) => {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return false;
    const data = marker.details?.data?.payloads?.[0]?.data;
    return data !== undefined && data !== null && Buffer.from(data).toString('utf8').includes('"activity_type":"runTool"');
  }).length;
  const scheduledRunTools = events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool').length;
  return { localRunTools, scheduledRunTools };
}

describe('reads as local activities', () => {
  it('are off by default, and the policy marks only reads without a heartbeat timeout local when on', () => {
    expect(testConfig().temporal.worker.localReads).toBe(false);
    const plain = countingRead('plain_lookup', () => 'x').tool;
    const beating = countingRead('beating_lookup', () => 'x', { heartbeatTimeout: 1_000 }).tool;
    const on = createToolRegistry({ tools: [plain, beating], localReads: true });
    expect(on.policy('plain_lookup')?.local).toBe(true);
    expect(on.policy('beating_lookup')?.local).toBeUndefined();
    const off = createToolRegistry({ tools: [plain, beating] });
    expect(off.policy('plain_lookup')?.local).toBeUndefined();
    // Where a read runs is not part of what it declares: the digest runTool checks is the same.
    expect(on.policy('plain_lookup')?.policyDigest).toBe(off.policy('plain_lookup')?.policyDigest);
  });

  it('runs a read in the workflow task (a marker, no activity) and a write as an activity, each once', async () => {
    const { tool, counter } = countingRead('quick_lookup', () => 'found');
    const config = localReadsConfig();
    const { result, history } = await runTurn({
      config,
      tools: [tool, ...builtInTools(config)],
      input: {
        prompt: 'x',
        tools: ['quick_lookup', 'save_draft'],
        model: scripted([
          { toolCalls: [{ tool: 'quick_lookup', args: { q: 'a' } }] },
          { toolCalls: [{ tool: 'save_draft', args: { path: 'drafts/a.md', content: 'a' } }] },
          { text: 'done' },
        ]),
      },
    });
    expect(result.status).toBe('completed');
    expect(counter.executions).toBe(1);
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.executions])).toEqual([
      ['quick_lookup', 'success', 1],
      ['save_draft', 'success', 1],
    ]);
    expect(dispatch(history)).toEqual({ localRunTools: 1, scheduledRunTools: 1 });
  });

  it('retries a local read that fails twice within its attempts; its handler runs exactly 3 times', async () => {
    const { tool, counter } = countingRead('flaky_lookup', (execution) => {
      if (execution <= 2) throw connectionReset();
      return `found on execution ${execution}`;
    });
    const { result, history } = await runTurn({
      config: localReadsConfig(),
      tools: [tool],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'flaky_lookup', args: { q: 'a' } }] }, { text: 'done' }]) },
    });
    expect(counter.executions).toBe(3);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'flaky_lookup', status: 'success', executions: 3 })]);
    expect(dispatch(history).scheduledRunTools).toBe(0);
  });

  it('stops a local read that always fails at maxAttempts; the model sees transient_failure', async () => {
    const broken = countingRead(
      'broken_lookup',
      () => {
        throw connectionReset();
      },
      { maxAttempts: 4 },
    );
    const { result, modelInputs } = await runTurn({
      config: localReadsConfig(),
      tools: [broken.tool],
      input: {
        prompt: 'x',
        model: scripted([{ toolCalls: [{ tool: 'broken_lookup', args: { q: 'a' } }] }, { text: 'I could not look it up.' }]),
      },
    });
    expect(broken.counter.executions).toBe(4);
    expect(result).toMatchObject({ status: 'completed', answer: 'I could not look it up.' });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'broken_lookup', status: 'error', code: 'transient_failure', executions: 4 }),
    ]);
    const seen = modelInputs[1].messages.find((message) => message.role === 'tool');
    expect(seen).toMatchObject({ tool: 'broken_lookup', result: { status: 'error', code: 'transient_failure' } });
  });

  it('stops a local read that hangs at its timeout, retried within maxAttempts', async () => {
    const hanging = countingRead('hanging_lookup', () => new Promise(() => {}), { timeout: 200, maxAttempts: 2 });
    const { result } = await runTurn({
      config: localReadsConfig(),
      tools: [hanging.tool],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'hanging_lookup', args: { q: 'b' } }] }, { text: 'no' }]) },
    });
    expect(hanging.counter.executions).toBe(2);
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'hanging_lookup', status: 'error', code: 'transient_failure', executions: 2 }),
    ]);
  });

  it('runs two local reads of one step side by side, one retried and one timed out, each within its own bound', async () => {
    const flaky = countingRead('flaky_lookup', (execution) => {
      if (execution <= 2) throw connectionReset();
      return 'found';
    });
    const hanging = countingRead('hanging_lookup', () => new Promise(() => {}), { timeout: 200, maxAttempts: 2 });
    const { result, history } = await runTurn({
      config: localReadsConfig(),
      tools: [flaky.tool, hanging.tool],
      input: {
        prompt: 'x',
        model: scripted([
          {
            toolCalls: [
              { tool: 'flaky_lookup', args: { q: 'a' } },
              { tool: 'hanging_lookup', args: { q: 'b' } },
            ],
          },
          { text: 'done' },
        ]),
      },
    });
    expect([flaky.counter.executions, hanging.counter.executions]).toEqual([3, 2]);
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ tool: 'flaky_lookup', status: 'success', executions: 3 }),
      expect.objectContaining({ tool: 'hanging_lookup', status: 'error', code: 'transient_failure', executions: 2 }),
    ]);
    expect(dispatch(history)).toEqual({ localRunTools: 2, scheduledRunTools: 0 });
  });

  it('ends a turn cancelled while its local read runs: the read is aborted, runs once, and the turn ends cancelled, not frozen', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const aborted = { count: 0 };
    const executions = { count: 0 };
    const waiting = defineTool({
      name: 'waiting_lookup',
      description: 'waits until it is aborted',
      input: z.strictObject({ q: z.string().describe('what to look up') }),
      effect: 'read',
      timeout: 60_000,
      maxAttempts: 3,
      handler: ({ q }, { signal }) =>
        new Promise((_, reject) => {
          executions.count++;
          started();
          signal.addEventListener('abort', () => {
            aborted.count++;
            reject(new Error(`aborted ${q}`));
          });
        }),
    });
    const outcome = await runTurn({
      config: localReadsConfig(),
      tools: [waiting],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'waiting_lookup', args: { q: 'a' } }] }, { text: 'done' }]) },
      interact: async (handle) => {
        await running;
        await handle.cancel();
      },
    }).catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    expect((outcome as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(executions.count).toBe(1);
    expect(aborted.count).toBe(1);
  }, 60_000);

  it('refuses a local read whose worker declares the tool differently, as an activity would be refused', async () => {
    const served = countingRead('versioned_lookup', () => 'new', { timeout: 5_000 });
    const declared = countingRead('versioned_lookup', () => 'old', { timeout: 9_000 });
    const { result } = await runTurn({
      config: localReadsConfig(),
      tools: [served.tool],
      modelStepTools: [declared.tool],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'versioned_lookup', args: { q: 'a' } }] }, { text: 'done' }]) },
    });
    expect(served.counter.executions).toBe(0);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'versioned_lookup', status: 'error' })]);
  });

  it('keeps a read with a heartbeat timeout an activity', async () => {
    const { tool, counter } = countingRead('beating_lookup', () => 'found', { heartbeatTimeout: 2_000 });
    const { result, history } = await runTurn({
      config: localReadsConfig(),
      tools: [tool],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'beating_lookup', args: { q: 'a' } }] }, { text: 'done' }]) },
    });
    expect(counter.executions).toBe(1);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(dispatch(history)).toEqual({ localRunTools: 0, scheduledRunTools: 1 });
  });
});
