// An irreversible tool that counts its own effects: what the tests compare the turns' results with.
import { z } from 'zod';
import { defineTool } from '../../tools/define-tool';

/**
 * `charge_card`, an irreversible write whose handler counts each charge it really makes by
 * idempotency key (the effect, counted where it happens); `delayMs` keeps each charge running
 * that long, so that a fault can land while it runs.
 */
export function countingCharge({ delayMs = 0, timeout }: { delayMs?: number; timeout?: string } = {}) {
  const charges = new Map<string, number>();
  const tool = defineTool({
    name: 'charge_card',
    description: 'Charges a card.',
    input: z.strictObject({ cents: z.number().int() }),
    effect: 'irreversible_write',
    ...(timeout ? { timeout } : {}),
    handler: async ({ cents }, { idempotencyKey }) => {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      charges.set(idempotencyKey!, (charges.get(idempotencyKey!) ?? 0) + 1);
      return `charged ${cents}`;
    },
  });
  return { tool, charges };
}
