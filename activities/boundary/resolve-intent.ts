import { Context } from '@temporalio/activity';
import type { ResolveIntentInput, ResolveIntentResult } from '../../common/activity-types';
import { argsDigest } from '../../tools/canonical-json';
import { intentKey } from '../../tools/intent-key';
import type { ToolRegistry } from '../../tools/tool-registry';
import { guardStore } from '../intents/guard-store';
import type { IdempotencyStore } from '../intents/intent-store';

/**
 * The `resolveIntent` activity: records in the idempotency store what a person (or a tool's own
 * status check) said about a write whose outcome was unknown. `applied` commits the intent with
 * the receipt given; `not_applied` gives up the started record, so that the intent may be claimed
 * again (a reversible write behind a fresh status lookup, an irreversible one only after a new
 * approval). The worker's log records who gave it up.
 */
export function createResolveIntent({ registry, store: given }: { registry: ToolRegistry; store: IdempotencyStore }) {
  // Whatever a store throws reaches the local activity's retry as an IntentStoreError naming the operation.
  const store = guardStore(given);
  return async function resolveIntent(input: ResolveIntentInput): Promise<ResolveIntentResult> {
    const tool = registry.get(input.tool);
    if (!tool) throw new Error(`resolveIntent: no tool named "${input.tool}" on this worker`);
    const args = tool.input.parse(input.args);
    const key = intentKey(tool, args, input.taskId);
    if (input.outcome === 'applied') {
      if (!input.receipt) throw new Error(`resolveIntent: an applied resolution of ${input.callId} needs its receipt`);
      await store.recordApplied({ key, taskId: input.taskId, tool: tool.name, argsDigest: argsDigest(args), receipt: input.receipt });
      return { key, store: 'committed' };
    }
    const record = await store.get(key);
    if (record?.state !== 'started' || !record.owner) return { key, store: 'absent' };
    const released = await store.release({ key, owner: record.owner });
    Context.current().log.info('write intent abandoned', { key, callId: input.callId, tool: tool.name, resolver: input.resolver });
    return { key, store: released ? 'released' : 'absent' };
  };
}
