import type { WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WAITING_FOR_SEARCH_ATTRIBUTE } from '../../common/search-attributes';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { approvalSignal, resumeSignal, resumeUpdate } from '../../workflows/messages';
import { renderDetails } from '../../workflows/decisions/details';
import { startingState } from '../../workflows/turn/turn-run';
import { openaiStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { keepHistory, RESUMED_STREAM_HISTORY, WAITING_FOR_APPROVAL_HISTORY } from '../helpers/histories';
import { testConfig } from '../helpers/test-config';
import { scripted, useTurnRunner, waitForState } from '../helpers/turn-runner';

const runTurn = useTurnRunner();
let provider: FakeProvider;

beforeAll(async () => {
  provider = await startFakeProvider();
});

afterAll(async () => {
  await provider.close();
});

const modelEnvironment = { env: { OPENAI_API_KEY: 'sk-test-openai-key' } };

/** A config whose default model is the fake OpenAI provider, with the given interrupted-stream settings. */
function gptConfig(streams: Record<string, unknown> = {}) {
  return testConfig({
    retry: { initialInterval: '100ms', maximumInterval: '1s' },
    model: { default: 'gpt', ...streams, models: { gpt: { provider: 'openai', model: 'gpt-test', baseURL: provider.baseURL } } },
  });
}

/** A stream that breaks after its three text chunks went out (`one two three `). */
const brokenStream = { kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 4 } as const;

/** What `TollgateWaitingFor` says of a turn now (the attribute the inbox lists turns by). */
async function waitingFor(handle: WorkflowHandle): Promise<unknown> {
  return (await handle.describe()).searchAttributes[WAITING_FOR_SEARCH_ATTRIBUTE.name] ?? [];
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Whether a history event is an upsert of `TollgateWaitingFor`. */
function listsWaitingFor(event: HistoryEvent): boolean {
  return Boolean(event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.[WAITING_FOR_SEARCH_ATTRIBUTE.name]);
}

/** Waits for the turn to stop in phase `interrupted`, and checks that the provider saw one request only. */
async function interrupted(handle: WorkflowHandle, before: number) {
  const state = await waitForState(handle, (current) => current.phase === 'interrupted');
  // Some real time for a second request, had anything made one.
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(provider.requests.length - before).toBe(1);
  return state;
}

describe('a model stream cut off after chunks went out, model.onInterruptedStream "ask" (the default)', () => {
  it('waits for a person; after the retry decision the same step is asked again: 1 request before it, 2 after', async () => {
    const before = provider.requests.length;
    provider.enqueue(brokenStream, { kind: 'stream', events: openaiStream.text(['Asked ', 'again.']) });
    let seen: Record<string, unknown> = {};
    const { result, handle, state, history } = await runTurn({
      config: gptConfig(),
      modelEnvironment,
      input: { prompt: 'hello' },
      interact: async (handle) => {
        const waiting = await interrupted(handle, before);
        const details = (await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
        const wrongStep = await handle.executeUpdate(resumeUpdate, { args: [{ step: 1, decision: 'retry' }] }).catch((error) => error);
        seen = { waiting, details, inbox: await waitingFor(handle), wrongStep, requestsBefore: provider.requests.length - before };
        await handle.executeUpdate(resumeUpdate, { args: [{ step: 0, decision: 'retry', by: 'ops' }] });
      },
    });
    expect(seen.waiting).toMatchObject({
      status: 'running',
      pendingResume: { step: 0, chunks: 3, partialText: 'one two three ', since: expect.any(String), expiresAt: expect.any(String) },
    });
    const { since, expiresAt } = (seen.waiting as { pendingResume: { since: string; expiresAt: string } }).pendingResume;
    expect(Date.parse(expiresAt) - Date.parse(since)).toBe(15 * 60_000);
    expect(seen.inbox).toEqual(['resume']);
    expect(seen.details).toContain('Waiting for a resume decision');
    expect(seen.details).toContain('`{"step":0,"decision":"retry"}`');
    expect(seen.wrongStep).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((seen.wrongStep as WorkflowUpdateFailedError).cause?.message)).toMatch(
      /step 1 does not wait for a resume decision; step 0 does/,
    );
    expect(seen.requestsBefore).toBe(1);

    expect(result).toMatchObject({ status: 'completed', answer: 'Asked again.', steps: 1 });
    expect(result.modelInterruptions).toEqual([
      { step: 0, message: expect.stringMatching(/after 3 chunks had gone out/), decision: 'retry', by: 'ops' },
    ]);
    expect(provider.requests.length - before).toBe(2);
    expect(state.pendingResume).toBeUndefined();
    expect(await waitingFor(handle)).toEqual([]);
    keepHistory(RESUMED_STREAM_HISTORY, history);
  });

  it('ends the turn model_failed with the partial text after the stop decision (a signal); the provider was called once', async () => {
    const before = provider.requests.length;
    provider.enqueue(brokenStream);
    const { result, state } = await runTurn({
      config: gptConfig(),
      modelEnvironment,
      input: { prompt: 'hello' },
      interact: async (handle) => {
        await interrupted(handle, before);
        // A decision for another step changes nothing and is recorded as rejected.
        await handle.signal(resumeSignal, { step: 4, decision: 'retry' });
        await handle.signal(resumeSignal, { step: 0, decision: 'stop' });
      },
    });
    expect(result).toMatchObject({
      status: 'model_failed',
      error: { type: 'stream_interrupted', message: expect.stringMatching(/after 3 chunks.*stopped by the resume decision/) },
      partialText: 'one two three ',
    });
    expect(result.modelInterruptions).toEqual([expect.objectContaining({ step: 0, decision: 'stop' })]);
    expect(state.rejectedDecisions).toEqual([
      expect.objectContaining({ decision: { step: 4, decision: 'retry' }, why: expect.stringMatching(/step 4 does not wait/) }),
    ]);
    expect(provider.requests.length - before).toBe(1);
  });

  it('stops the turn once model.resumeTimeout (15 min by default) passed without a decision; no second request', async () => {
    const before = provider.requests.length;
    provider.enqueue(brokenStream);
    const { result, history } = await runTurn({ config: gptConfig(), modelEnvironment, input: { prompt: 'hello' } });
    expect(result).toMatchObject({
      status: 'model_failed',
      error: { type: 'stream_interrupted', message: expect.stringMatching(/nobody decided within 900 s \(model.resumeTimeout\)/) },
      partialText: 'one two three ',
    });
    expect(result.modelInterruptions).toEqual([expect.objectContaining({ decision: 'timeout' })]);
    const events = history.events ?? [];
    const seconds = (event: (typeof events)[number]) => Number(event.eventTime!.seconds);
    expect(seconds(events.at(-1)!) - seconds(events[0])).toBeGreaterThanOrEqual(15 * 60);
    expect(events.filter((event) => event.timerStartedEventAttributes)).toHaveLength(1);
    expect(provider.requests.length - before).toBe(1);
  });
});

describe('model.onInterruptedStream "stop" and "fresh_step"', () => {
  it('"stop" ends the turn model_failed with stream_interrupted and the partial text at once; the provider was called once', async () => {
    const before = provider.requests.length;
    provider.enqueue(brokenStream);
    const { result, history } = await runTurn({
      config: gptConfig({ onInterruptedStream: 'stop' }),
      modelEnvironment,
      input: { prompt: 'hello' },
    });
    expect(result).toMatchObject({
      status: 'model_failed',
      error: { type: 'stream_interrupted', message: expect.stringMatching(/model.onInterruptedStream is "stop"/) },
      partialText: 'one two three ',
      modelInterruptions: [expect.objectContaining({ step: 0, decision: 'stop' })],
    });
    // No wait: no timer, and the inbox never listed the turn.
    expect((history.events ?? []).filter((event) => event.timerStartedEventAttributes)).toHaveLength(0);
    expect((history.events ?? []).filter(listsWaitingFor)).toHaveLength(0);
    expect(provider.requests.length - before).toBe(1);
  });

  it('"fresh_step" keeps the behaviour for batch turns: a fresh step unasked, paid from the error budget', async () => {
    const before = provider.requests.length;
    provider.enqueue(brokenStream, { kind: 'stream', events: openaiStream.text(['A fresh answer.']) });
    const { result } = await runTurn({
      config: gptConfig({ onInterruptedStream: 'fresh_step' }),
      modelEnvironment,
      input: { prompt: 'hello', limits: { errorBudget: 1 } },
    });
    expect(result).toMatchObject({ status: 'completed', answer: 'A fresh answer.', steps: 2 });
    expect(result.modelInterruptions).toEqual([expect.objectContaining({ step: 0, decision: 'fresh_step' })]);
    expect(provider.requests.length - before).toBe(2);
  });

  it('rejects an unknown model.onInterruptedStream and a bad model.resumeTimeout, naming the key', () => {
    expect(() => gptConfig({ onInterruptedStream: 'replay' })).toThrow(/model\.onInterruptedStream.*"ask", "stop" or "fresh_step"/s);
    expect(() => gptConfig({ resumeTimeout: 'soon' })).toThrow(/model\.resumeTimeout/);
  });
});

describe('the one inbox: TollgateWaitingFor', () => {
  it('lists a turn under "approval" while its call waits, with the exact decision in the details, and clears it after', async () => {
    const config = testConfig();
    const send = sendMessageTool({ workspace: config.workspace });
    let seen: Record<string, unknown> = {};
    const step = { toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } }] };
    const { result, handle, history } = await runTurn({
      config,
      tools: [send],
      input: { prompt: 'x', model: scripted([step, { text: 'done' }]) },
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        const { callId, argsDigest } = state.pendingApprovals[0];
        const description = await handle.describe();
        const details = (await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
        seen = { attributes: description.searchAttributes, details, callId, argsDigest };
        await handle.signal(approvalSignal, { callId, decision: 'approve', argsDigest });
      },
    });
    expect(seen.attributes).toMatchObject({ TollgateWaitingFor: ['approval'], TollgateAwaitingApproval: [true] });
    expect(seen.details).toContain(`\`${JSON.stringify({ callId: seen.callId, decision: 'approve', argsDigest: seen.argsDigest })}\``);
    expect(result.status).toBe('completed');
    expect(await waitingFor(handle)).toEqual([]);
    keepHistory(WAITING_FOR_APPROVAL_HISTORY, history);
    // One upsert sets both attributes and one clears both.
    const upserts = (await handle.fetchHistory()).events?.filter(listsWaitingFor) ?? [];
    expect(
      upserts.map((event) => Object.keys(event.upsertWorkflowSearchAttributesEventAttributes!.searchAttributes!.indexedFields!).sort()),
    ).toEqual([
      ['TollgateAwaitingApproval', 'TollgateWaitingFor'],
      ['TollgateAwaitingApproval', 'TollgateWaitingFor'],
    ]);
  });

  it("shows a resume wait's partial text and both decisions in the Web UI's details", () => {
    const details = renderDetails({
      ...startingState('t'),
      phase: 'interrupted',
      step: 2,
      pendingResume: {
        step: 2,
        chunks: 5,
        partialText: 'The plan ```is',
        round: 1,
        since: '2026-01-01T00:00:00.000Z',
        expiresAt: '2026-01-01T00:15:00.000Z',
      },
    });
    expect(details).toContain('after 5 chunks had gone out');
    expect(details).toContain("The plan '''is");
    expect(details).toContain('`{"step":2,"decision":"retry"}`');
    expect(details).toContain('`{"step":2,"decision":"stop"}`');
  });
});
