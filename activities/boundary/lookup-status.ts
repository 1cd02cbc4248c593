import { Context } from '@temporalio/activity';
import type { LookupStatusInput, StatusLookup, ToolResult } from '../../common/types';
import type { IdempotencyStore } from '../intents/intent-store';
import { intentKey } from '../../tools/intent-key';
import type { ToolRegistry } from '../../tools/tool-registry';

/**
 * The `lookupStatus` activity: asks the store and then the tool's own status check whether a
 * write intent already took effect. It only reads, so it may be retried freely. "applied" comes
 * with the receipt the model then sees instead of a second write.
 */
export function createLookupStatus({ registry, store }: { registry: ToolRegistry; store: IdempotencyStore }) {
  return async function lookupStatus({ taskId, callId, tool: name, args }: LookupStatusInput): Promise<StatusLookup> {
    const tool = registry.get(name);
    if (!tool) return { state: 'unknown', reason: `no tool named "${name}" on this worker` };
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) return { state: 'unknown', reason: 'the arguments no longer fit the tool schema' };
    const idempotencyKey = intentKey(tool, parsed.data, taskId);
    const record = await store.get(idempotencyKey);
    if (record?.state === 'committed' && record.receipt) return { state: 'applied', receipt: record.receipt, source: 'store' };
    if (!tool.status) {
      return record?.state === 'started' ? { state: 'unknown', reason: 'started earlier and never confirmed' } : { state: 'not_applied' };
    }
    let answer;
    try {
      answer = await tool.status(parsed.data, { taskId, tool: name, idempotencyKey });
    } catch (error) {
      Context.current().log.warn('status check threw', { tool: name, callId, stack: (error as Error)?.stack });
      return { state: 'unknown', reason: `the status check failed: ${(error as Error).message.split('\n')[0]}` };
    }
    if (answer === 'not_applied') return { state: 'not_applied' };
    if (answer === 'unknown') return { state: 'unknown', reason: 'the tool cannot tell whether it took effect' };
    const data = typeof answer === 'object' && answer.data !== undefined ? answer.data : { applied: true, idempotencyKey };
    const receipt: ToolResult = { status: 'success', data };
    await store.markCommitted(idempotencyKey, receipt);
    return { state: 'applied', receipt, source: 'tool' };
  };
}
