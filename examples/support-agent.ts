// A support agent built only through the public API (in your project: import from 'tollgate'): its
// instructions, model settings, two tools (a read and an irreversible refund that waits for a
// person's approval), limits and a typed answer. examples/support-agent.test.ts runs it.
import { z } from 'zod';
import { createWorker, defineAgent, defineTool, loadConfig, TollgateClient, ToolOutcome, type AgentOutput } from '../index';

/** The shop's orders, in memory here; your tools call your own systems. */
export const orders = new Map([
  ['A-1001', { paidCents: 4999, state: 'delivered' }],
  ['A-1002', { paidCents: 2599, state: 'in transit' }],
]);

/** Refunds really made, by order: what the test compares the turns with. */
export const refunds: Array<{ orderId: string; cents: number }> = [];

/** A read: retried within its bound, never waits for anyone. */
export const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Looks an order up by its id: what was paid and where it is.',
  input: z.strictObject({ orderId: z.string().describe('The order id, such as A-1001.') }),
  effect: 'read',
  timeout: '5s',
  handler: ({ orderId }) => {
    const order = orders.get(orderId);
    return order ? ToolOutcome.ok({ orderId, ...order }) : ToolOutcome.error(`no order ${orderId}`, { code: 'invalid_arguments' });
  },
});

/** An irreversible write: it runs only after a person approved these exact arguments, and never twice. */
export const refundOrder = defineTool({
  name: 'refund_order',
  description: 'Refunds an order, in cents, to the original payment method.',
  input: z.strictObject({ orderId: z.string(), cents: z.number().int().positive(), reason: z.string() }),
  effect: 'irreversible_write',
  approvalTimeout: '24h',
  handler: ({ orderId, cents }) => {
    refunds.push({ orderId, cents });
    return { refundedCents: cents };
  },
});

/** The agent: a turn names it with `agent: 'support'`; the model is offered its two tools only. */
export const support = defineAgent({
  name: 'support',
  description: 'Answers customers about their orders and refunds orders that arrived broken.',
  instructions: [
    'You are the support desk of a small shop.',
    'Look the order up before you answer about it.',
    'Refund an order only when the customer says it arrived broken, and never more than was paid.',
  ].join('\n'),
  modelSettings: { temperature: 0.2, maxOutputTokens: 800 },
  tools: [lookupOrder, refundOrder],
  limits: { maxSteps: 8 },
  output: z.object({ refunded: z.boolean(), message: z.string().describe('What the customer is told.') }),
});

/** The typed answer of a support turn. */
export type SupportOutput = AgentOutput<typeof support>;

/** Runs a worker serving the agent, and one turn of it on the config's default model; a refund waits for `tollgate approve`. */
export async function main(config = loadConfig()) {
  const worker = await createWorker({ config, tools: [lookupOrder, refundOrder], agents: [support] });
  const client = await TollgateClient.connect(config);
  try {
    return await worker.runUntil(async () => {
      const { workflowId } = await client.startTurn({ taskId: 'support-A-1001', prompt: 'Order A-1001 arrived broken.', agent: 'support' });
      console.log(`started ${workflowId}; approve the refund with: tollgate inbox, then tollgate approve ${workflowId} <callId>`);
      return client.result<SupportOutput>(workflowId);
    });
  } finally {
    await client.close();
  }
}

if (require.main === module) {
  main().then((result) => console.log(result.status, result.output));
}
