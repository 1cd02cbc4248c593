// The support agent: its instructions and the tools it may call. A call to any other tool is
// refused at the boundary (`forbidden`) and never runs.
import { defineAgent } from 'tollgate';
import { lookupOrder, refundOrder } from './tools.mts';

export const support = defineAgent({
  name: 'support',
  description: 'Answers questions about orders and refunds them when they arrived broken.',
  instructions: [
    'You are the support desk of a small shop.',
    'Look the order up before you answer about it.',
    'Refund an order only when the customer says it arrived broken, and never more than was paid.',
  ].join('\n'),
  tools: [lookupOrder, refundOrder],
});
