// A read tool whose handler counts its real executions and behaves as the test tells it.
import { z } from 'zod';
import { defineTool } from '../../tools/define-tool';

export function countingRead(
  name: string,
  behave: (execution: number) => unknown,
  extra: { timeout?: number; maxAttempts?: number; heartbeatTimeout?: number } = {},
) {
  const counter = { executions: 0 };
  const tool = defineTool({
    name,
    description: `${name} for tests`,
    input: z.strictObject({ q: z.string().describe('what to look up') }),
    effect: 'read',
    maxAttempts: extra.maxAttempts ?? 3,
    timeout: extra.timeout ?? 5_000,
    ...(extra.heartbeatTimeout === undefined ? {} : { heartbeatTimeout: extra.heartbeatTimeout }),
    handler: async () => behave(++counter.executions),
  });
  return { tool, counter };
}

/** The error a dropped connection gives: transient, so a read is retried after it. */
export function connectionReset(): Error {
  return Object.assign(new Error('socket hang up: read ECONNRESET'), { code: 'ECONNRESET' });
}
