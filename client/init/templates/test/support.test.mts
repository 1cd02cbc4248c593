// `npm test`: the support agent's tools on Temporal's time-skipping server, with a scripted model
// and their real executions counted (tollgate/testing). Nothing here needs a network or a key.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestEnvironment, script, type TestEnvironment } from 'tollgate/testing';
import { lookupOrder, refundOrder } from '../src/tools.mts';

let kit: TestEnvironment;
before(async () => {
  kit = await createTestEnvironment({ tools: [lookupOrder, refundOrder] });
});
after(() => kit?.teardown());

test('a refund runs once, after a person approved it', async () => {
  const turn = await kit.startTurn('A-1001 arrived broken', [
    script.toolCall('lookup_order', { orderId: 'A-1001' }),
    script.toolCall('refund_order', { orderId: 'A-1001', cents: 4999, reason: 'arrived broken' }),
    script.text('Refunded.'),
  ]);
  const pending = await kit.pendingApproval(turn);
  assert.equal(pending.tool, 'refund_order');
  assert.equal(kit.executions('refund_order'), 0);
  await kit.approve(turn);
  const result = await turn.result();
  assert.equal(result.status, 'completed');
  assert.deepEqual(
    result.toolCalls.map((call) => [call.tool, call.status, call.executions]),
    [
      ['lookup_order', 'success', 1],
      ['refund_order', 'success', 1],
    ],
  );
  assert.equal(kit.executions('refund_order'), 1);
});

test('a refund nobody approves within 24 hours never runs', async () => {
  const refundsBefore = kit.executions('refund_order');
  const turn = await kit.startTurn(
    'refund A-1002',
    [
      script.toolCall('refund_order', { orderId: 'A-1002', cents: 2599, reason: 'arrived broken' }),
      script.text('Nobody approved the refund.'),
    ],
    { limits: { deadlineMs: 25 * 3_600_000 } },
  );
  await kit.pendingApproval(turn);
  await kit.skip('24h');
  const result = await turn.result();
  assert.deepEqual(
    result.toolCalls.map((call) => [call.code, call.executions]),
    [['approval_expired', 0]],
  );
  assert.equal(kit.executions('refund_order'), refundsBefore);
});
