// The support agent's tools. Each is declared once: what the model reads (name, description, the
// zod schema) and what the boundary enforces (its effect, timeout, attempts) come from here.
import { z } from 'zod';
import { defineTool, ToolOutcome } from 'tollgate';

/** The orders this example knows; your tool would ask your order system. */
const orders = new Map([
  ['A-1001', { orderId: 'A-1001', item: 'Kettle', paidCents: 4999, status: 'delivered' }],
  ['A-1002', { orderId: 'A-1002', item: 'Teapot', paidCents: 2599, status: 'shipped' }],
]);

/** A read: retried within a bound on a timeout or a transient fault, never asked about. */
export const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Looks an order up by its id: the item, the amount paid in cents and its status.',
  input: z.strictObject({ orderId: z.string().describe('The order id, such as A-1001.') }),
  effect: 'read',
  timeout: '5s',
  handler: ({ orderId }) => {
    const order = orders.get(orderId);
    return order ? ToolOutcome.ok(order) : ToolOutcome.error(`no order ${orderId}`, { code: 'invalid_arguments' });
  },
});

/**
 * An irreversible write: money leaves. It runs only after a person approved these exact arguments,
 * at most once, and a refund cut off mid-way is reported, never retried blindly.
 */
export const refundOrder = defineTool({
  name: 'refund_order',
  description: 'Refunds an order, in full or in part. A person approves every refund before it is made.',
  input: z.strictObject({
    orderId: z.string().describe('The order id, such as A-1001.'),
    cents: z.number().int().positive().describe('The amount to refund, in cents.'),
    reason: z.string().describe('Why, in a few words, for the person who approves it.'),
  }),
  effect: 'irreversible_write',
  timeout: '10s',
  handler: ({ orderId, cents, reason }, { idempotencyKey }) => {
    const order = orders.get(orderId);
    if (!order) return ToolOutcome.error(`no order ${orderId}`, { code: 'invalid_arguments' });
    if (cents > order.paidCents) return ToolOutcome.error(`${orderId} was paid ${order.paidCents} cents`, { code: 'invalid_arguments' });
    // Here your code calls the payment provider, passing idempotencyKey as its idempotency key.
    console.log(`refund_order: ${cents} cents for ${orderId} (${reason}), key ${idempotencyKey}`);
    return ToolOutcome.ok({ refundId: `R-${orderId}`, orderId, cents });
  },
});
