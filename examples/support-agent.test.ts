// The support agent of examples/support-agent.ts on the testing kit (time-skipping server, the kit's
// model playing each turn's script): its refund waits for a person and runs once, a tool outside
// its set is refused without running, and an answer that does not fit its output type is sent back.
// In your project the imports are 'tollgate' and 'tollgate/testing'.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../index';
import { createTestEnvironment, script, type TestEnvironment } from '../testing';
import { lookupOrder, refundOrder, refunds, support, type SupportOutput } from './support-agent';

/** A tool the worker serves that the support agent does not have: the boundary refuses its calls. */
let closed = 0;
const closeAccount = defineTool({
  name: 'close_account',
  description: 'Closes a customer account.',
  input: z.strictObject({ customer: z.string() }),
  effect: 'irreversible_write',
  handler: () => {
    closed++;
    return 'closed';
  },
});

let kit: TestEnvironment;
beforeAll(async () => {
  kit = await createTestEnvironment({ tools: [lookupOrder, refundOrder, closeAccount], agents: [support] });
});
afterAll(() => kit?.teardown());

const answer = (output: SupportOutput) => script.text(JSON.stringify(output));

describe('the support agent', () => {
  it('refunds a broken order once, after a person approved it, and answers in its output type', async () => {
    const before = kit.executions('refund_order');
    const turn = await kit.startTurn(
      'A-1001 arrived broken',
      [
        script.toolCall('lookup_order', { orderId: 'A-1001' }),
        script.toolCall('refund_order', { orderId: 'A-1001', cents: 4999, reason: 'arrived broken' }),
        answer({ refunded: true, message: 'Your 49.99 EUR are on their way back.' }),
      ],
      { agent: 'support' },
    );
    const pending = await kit.pendingApproval(turn);
    expect(pending).toMatchObject({ tool: 'refund_order', agent: { name: 'support', digest: support.digest } });
    expect(kit.executions('refund_order')).toBe(before);
    await kit.approve(turn);
    const result = await turn.result();
    expect(result).toMatchObject({ status: 'completed', agent: { name: 'support', digest: support.digest } });
    const output = result.output as SupportOutput;
    expect(output).toEqual({ refunded: true, message: 'Your 49.99 EUR are on their way back.' });
    expect(kit.executions('refund_order')).toBe(before + 1);
    expect(refunds).toContainEqual({ orderId: 'A-1001', cents: 4999 });
  });

  it('has a call to a tool outside its set refused (forbidden, 0 executions), though the worker serves the tool', async () => {
    const result = await kit.run(
      'close my account',
      [script.toolCall('close_account', { customer: 'ada' }), answer({ refunded: false, message: 'I cannot close accounts.' })],
      // The script's call is refused, not run: the turn does not follow its script, as meant.
      { agent: 'support', followScript: false },
    );
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'close_account', code: 'forbidden', executions: 0 })]);
    expect(closed).toBe(0);
    expect(result.status).toBe('completed');
  });

  it('is sent back an answer that is not its output type, and completes with the one that is', async () => {
    const result = await kit.run(
      'where is A-1002?',
      [
        script.toolCall('lookup_order', { orderId: 'A-1002' }),
        script.text('It is in transit.'),
        answer({ refunded: false, message: 'A-1002 is in transit.' }),
      ],
      { agent: 'support' },
    );
    expect(result).toMatchObject({ status: 'completed', steps: 3, output: { refunded: false, message: 'A-1002 is in transit.' } });
  });

  it('ends output_invalid when its answers keep missing the output type, keeping the last one', async () => {
    const result = await kit.run('refund?', [script.text('yes'), script.text('{"refunded": "yes"}'), script.text('{"refunded": 1}')], {
      agent: 'support',
    });
    expect(result).toMatchObject({ status: 'output_invalid', answer: '{"refunded": 1}', error: { type: 'output_invalid' } });
    expect(result.output).toBeUndefined();
  });
});
