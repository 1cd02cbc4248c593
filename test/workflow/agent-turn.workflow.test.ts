import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { builtInTools } from '../../tools/built-in';
import type { ScriptStep } from '../../common/contract/turn';
import { approvalSignal } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, waitForState, useTurnRunner } from '../helpers/turn-runner';
import { connectionReset, countingRead } from '../helpers/counting-read';

const runTurn = useTurnRunner();

describe('agentTurn', () => {
  it('plays the built-in plan over the corpus: search, read, draft, send after approval, answer', async () => {
    const { result, state, config } = await runTurn({
      input: { prompt: 'How fast must the on-call primary acknowledge a page?' },
      interact: async (handle) => {
        const waiting = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        expect(waiting.pendingApprovals).toEqual([expect.objectContaining({ tool: 'send_message', callId: 'call-3-0' })]);
        await handle.signal(approvalSignal, {
          callId: 'call-3-0',
          decision: 'approve',
          approver: 'tester',
          argsDigest: waiting.pendingApprovals[0].argsDigest,
        });
      },
    });
    expect(result.status).toBe('completed');
    expect(result.answer).toContain('acknowledges a page within 15 minutes');
    expect(result.answer).toContain('It was sent to the requester.');
    expect(result.toolCalls.map((event) => [event.tool, event.effect, event.status, event.executions])).toEqual([
      ['search_local_sources', 'read', 'success', 1],
      ['get_document', 'read', 'success', 1],
      ['get_document', 'read', 'success', 1],
      ['save_draft', 'reversible_write', 'success', 1],
      ['send_message', 'irreversible_write', 'success', 1],
    ]);
    expect(
      readdirSync(path.join(config.workspace, 'outbox'), { recursive: true }).filter((name) => String(name).endsWith('.json')),
    ).toHaveLength(1);
    expect(readFileSync(path.join(config.workspace, 'drafts', 'task-1', 'brief-task-1.md'), 'utf8')).toContain(
      'acknowledges a page within 15 minutes',
    );
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(state).toMatchObject({ taskId: 'task-1', status: 'completed', pendingApprovals: [], toolCalls: result.toolCalls });
    expect(state.decisions).toEqual([{ callId: 'call-3-0', decision: 'approve', approver: 'tester' }]);
  });

  it('plays exactly the given script', async () => {
    const { result, modelInputs } = await runTurn({
      input: {
        prompt: 'anything',
        model: scripted([{ toolCalls: [{ tool: 'get_document', args: { id: 'pricing-plans' } }] }, { text: 'Pro costs 8 EUR.' }]),
      },
    });
    expect(result).toMatchObject({ status: 'completed', answer: 'Pro costs 8 EUR.', steps: 2 });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ callId: 'call-0-0', tool: 'get_document', status: 'success', executions: 1, truncated: false }),
    ]);
    const toolMessage = modelInputs[1].messages.find((message) => message.role === 'tool');
    expect(toolMessage).toMatchObject({ result: { status: 'success', data: { id: 'pricing-plans' } } });
  });

  it('retries a read that fails twice; its handler runs exactly 3 times', async () => {
    const { tool, counter } = countingRead('flaky_lookup', (execution) => {
      if (execution <= 2) throw connectionReset();
      return `found on execution ${execution}`;
    });
    const { result } = await runTurn({
      tools: [tool],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'flaky_lookup', args: { q: 'a' } }] }, { text: 'done' }]) },
    });
    expect(counter.executions).toBe(3);
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'flaky_lookup', status: 'success', executions: 3 })]);
  });

  it('stops a read that always fails at maxAttempts; the turn goes on and the model sees transient_failure', async () => {
    const { tool, counter } = countingRead(
      'broken_lookup',
      () => {
        throw connectionReset();
      },
      { maxAttempts: 4 },
    );
    const { result, modelInputs } = await runTurn({
      tools: [tool],
      input: {
        prompt: 'x',
        model: scripted([{ toolCalls: [{ tool: 'broken_lookup', args: { q: 'a' } }] }, { text: 'I could not look it up.' }]),
      },
    });
    expect(counter.executions).toBe(4);
    expect(result).toMatchObject({ status: 'completed', answer: 'I could not look it up.' });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'error', code: 'transient_failure', executions: 4 })]);
    const seen = modelInputs[1].messages.find((message) => message.role === 'tool');
    expect(seen).toEqual({
      role: 'tool',
      callId: 'call-0-0',
      tool: 'broken_lookup',
      result: { status: 'error', code: 'transient_failure', retryable: true, message: 'socket hang up: read ECONNRESET' },
    });
  });

  it('retries a read that times out, within its bound', async () => {
    const { tool, counter } = countingRead('slow_lookup', (execution) => (execution === 1 ? new Promise(() => {}) : 'fast now'), {
      timeout: 200,
    });
    const { result } = await runTurn({
      tools: [tool],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'slow_lookup', args: { q: 'a' } }] }, { text: 'done' }]) },
    });
    expect(counter.executions).toBe(2);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 2 })]);
  });

  it('never schedules unknown, invalid or forbidden calls, and the model gets their codes', async () => {
    const { tool, counter } = countingRead('lookup', () => 'ok');
    const { result, runToolScheduled, modelInputs } = await runTurn({
      tools: [tool, ...builtInTools(testConfig())],
      input: {
        prompt: 'x',
        tools: ['lookup'],
        limits: { errorBudget: 10 },
        model: scripted([
          {
            toolCalls: [
              { tool: 'launch_rockets', args: {} },
              { tool: 'lookup', args: {} },
              { tool: 'lookup', args: { q: 1 } },
              { tool: 'get_document', args: { id: 'refund-policy' } },
            ],
          },
          { text: 'done' },
        ]),
      },
    });
    expect(counter.executions).toBe(0);
    expect(runToolScheduled).toBe(0);
    expect(result.toolCalls.map((event) => [event.tool, event.code, event.executions])).toEqual([
      ['launch_rockets', 'unknown_tool', 0],
      ['lookup', 'invalid_arguments', 0],
      ['lookup', 'invalid_arguments', 0],
      ['get_document', 'forbidden', 0],
    ]);
    const codes = modelInputs[1].messages.flatMap((message) => (message.role === 'tool' ? [message.result.code] : []));
    expect(codes).toEqual(['unknown_tool', 'invalid_arguments', 'invalid_arguments', 'forbidden']);
  });

  it('truncates oversized output and records the original size in the event', async () => {
    const { tool } = countingRead('big_lookup', () => 'z'.repeat(50_000));
    const small = { ...tool, maxOutputChars: 1_000 };
    const { result, modelInputs } = await runTurn({
      tools: [small],
      input: { prompt: 'x', model: scripted([{ toolCalls: [{ tool: 'big_lookup', args: { q: 'a' } }] }, { text: 'done' }]) },
    });
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ status: 'success', truncated: true, originalSize: 50_000, executions: 1 }),
    ]);
    const seen = modelInputs[1].messages.find((message) => message.role === 'tool');
    expect(seen?.role === 'tool' && String(seen.result.data).length).toBeLessThan(1_100);
  });

  it('ends at the step limit', async () => {
    const step: ScriptStep = { toolCalls: [{ tool: 'search_local_sources', args: { query: 'refund' } }] };
    const { result } = await runTurn({
      input: { prompt: 'x', limits: { maxSteps: 2 }, model: scripted([step, step, step, { text: 'never' }]) },
    });
    expect(result).toMatchObject({ status: 'step_limit', steps: 2 });
    expect(result.answer).toBeUndefined();
    expect(result.toolCalls).toHaveLength(2);
  });

  it('ends when the error budget is spent', async () => {
    const bad: ScriptStep = { toolCalls: [{ tool: 'get_document', args: { id: 'no-such-document' } }] };
    const { result } = await runTurn({
      input: { prompt: 'x', limits: { errorBudget: 1 }, model: scripted([bad, bad, bad, { text: 'never' }]) },
    });
    expect(result.status).toBe('error_budget_exhausted');
    expect(result.toolCalls.map((event) => event.code)).toEqual(['tool_failure', 'tool_failure']);
  });

  it('fails a turn with bad input, naming the field', async () => {
    const failure = await runTurn({ input: { taskId: '', prompt: 'x' } }).catch((error) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(failure.cause).toMatchObject({ type: 'invalid_input', message: 'agentTurn input: taskId must be a non-empty string' });
  });

  it('fails a turn started with a history over its byte bound, naming its size (measured as encoded, emoji included)', async () => {
    const history = Array.from({ length: 3 }, () => ({ role: 'user' as const, content: '😀'.repeat(100_000) }));
    const failure = await runTurn({ input: { prompt: 'x', history } }).catch((error) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(failure.cause).toMatchObject({ type: 'invalid_input' });
    expect(failure.cause.message).toMatch(/^agentTurn input: history is \d+ bytes of JSON; at most 1048576 are taken$/);
  });

  it('fails a turn whose model is not configured, without retrying', async () => {
    const failure = await runTurn({ input: { prompt: 'x', model: 'gpt-unknown' } }).catch((error) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(failure.cause?.cause).toMatchObject({ type: 'invalid_model' });
  });
});
