import { Context } from '@temporalio/activity';
import type { ResolveIntentInput, ResolveIntentResult } from '../../common/activity-types';
import { argsDigest } from '../../tools/canonical-json';
import { intentKey } from '../../tools/intent-key';
import type { ToolRegistry } from '../../tools/tool-registry';
import { guardStore } from '../../intents/guard-store';
import { IntentStoreError, type IdempotencyStore } from '../../intents/intent-store';
import { redactText } from './redact';
import { retryStoreCall } from './retry-store-call';

/**
 * The `resolveIntent` activity: records in the idempotency store what a person (or a tool's own
 * status check) said about a write whose outcome was unknown. `applied` commits the intent with
 * the receipt given; `not_applied` gives up the started record, so that the intent may be claimed
 * again (a reversible write behind a fresh status lookup, an irreversible one only after a new
 * approval). The worker's log records who gave it up. A store that still fails after a short
 * retry (STORE_FAULT_RETRY), whatever it throws, leaves the record as it was and the answer is
 * `unrecorded`: the record stays started, so the intent is never run again on a guess, and the
 * turn goes on with the person's word.
 */
export function createResolveIntent({ registry, store: given }: { registry: ToolRegistry; store: IdempotencyStore }) {
  // Whatever a store throws reaches the local activity's retry as an IntentStoreError naming the operation.
  const store = guardStore(given);
  return async function resolveIntent(input: ResolveIntentInput): Promise<ResolveIntentResult> {
    const tool = registry.get(input.tool);
    if (!tool) throw new Error(`resolveIntent: no tool named "${input.tool}" on this worker`);
    const args = tool.input.parse(input.args);
    const key = intentKey(tool, args, input.taskId);
    const recorded = async (work: () => Promise<ResolveIntentResult>): Promise<ResolveIntentResult> => {
      try {
        return await work();
      } catch (error) {
        if (!IntentStoreError.isInstance(error)) throw error;
        Context.current().log.error('could not record a resolution in the idempotency store; the intent stays as it was', {
          key,
          callId: input.callId,
          tool: tool.name,
          outcome: input.outcome,
          message: redactText(error.message),
        });
        return { key, store: 'unrecorded' };
      }
    };
    const retried = <T>(operation: string, call: () => Promise<T>) => retryStoreCall({ operation, call });
    if (input.outcome === 'applied') {
      if (!input.receipt) throw new Error(`resolveIntent: an applied resolution of ${input.callId} needs its receipt`);
      const receipt = input.receipt;
      return recorded(async () => {
        await retried(`record applied intent ${key}`, () =>
          store.recordApplied({ key, taskId: input.taskId, tool: tool.name, argsDigest: argsDigest(args), receipt }),
        );
        return { key, store: 'committed' };
      });
    }
    return recorded(async () => {
      const record = await retried(`read intent ${key}`, () => store.get(key));
      if (record?.state !== 'started' || !record.owner) return { key, store: 'absent' };
      const owner = record.owner;
      const released = await retried(`release intent ${key}`, () => store.release({ key, owner }));
      Context.current().log.info('write intent abandoned', { key, callId: input.callId, tool: tool.name, resolver: input.resolver });
      return { key, store: released ? 'released' : 'absent' };
    });
  };
}
