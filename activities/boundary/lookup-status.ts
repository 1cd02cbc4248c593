import { Context } from '@temporalio/activity';
import type { ToolResult } from '../../common/contract/tools';
import type { LookupStatusInput, StatusLookup } from '../../common/activity-types';
import { guardStore } from '../../intents/guard-store';
import { IntentStoreError, type IdempotencyStore, type IntentRecord } from '../../intents/intent-store';
import { retryStoreCall } from './retry-store-call';
import { inFlight } from '../../common/write-intent/claim-rule';
import { argsDigest } from '../../tools/canonical-json';
import type { ToolDefinition } from '../../tools/define-tool';
import { intentKey } from '../../tools/intent-key';
import type { ToolRegistry } from '../../tools/tool-registry';
import { DEFAULT_SECRET_PATTERNS, redactText } from './redact';

/** The tool's own status check, asked once: a throw is `unknown`, never a guess. */
export async function askStatusCheck({
  tool,
  args,
  taskId,
  idempotencyKey,
  secretPatterns = DEFAULT_SECRET_PATTERNS,
}: {
  tool: ToolDefinition;
  args: unknown;
  taskId: string;
  idempotencyKey: string;
  /** Removed from what the log and the reason show of the check's error. */
  secretPatterns?: readonly RegExp[];
}): Promise<StatusLookup> {
  if (!tool.status) return { state: 'unknown', reason: `${tool.name} has no status check` };
  let answer;
  try {
    answer = await tool.status(args, { taskId, tool: tool.name, idempotencyKey });
  } catch (error) {
    Context.current().log.warn('status check threw', {
      tool: tool.name,
      stack: redactText(String((error as Error)?.stack), secretPatterns),
    });
    return {
      state: 'unknown',
      reason: redactText(`the status check failed: ${String((error as Error)?.message ?? error).split('\n')[0]}`, secretPatterns),
    };
  }
  if (answer === 'not_applied') return { state: 'not_applied' };
  if (answer === 'applied' || (typeof answer === 'object' && answer !== null && answer.state === 'applied')) {
    const data = typeof answer === 'object' && answer.data !== undefined ? answer.data : { applied: true, idempotencyKey };
    return { state: 'applied', receipt: { status: 'success', data }, source: 'tool' };
  }
  return { state: 'unknown', reason: 'the tool cannot tell whether it took effect' };
}

/**
 * The `lookupStatus` activity: whether a write intent already took effect. The tool's own status
 * check decides; the store's receipt answers only when the check agrees, cannot tell, or the tool
 * has none. A started attempt still inside its lease is in flight, so "not applied" becomes
 * `unknown` for it; a store that still fails after a short retry (STORE_FAULT_RETRY), whatever it
 * throws, is `unknown` too, never a workflow failure.
 * It only reads (and records a receipt the check found), so it may be retried freely.
 */
export function createLookupStatus({
  registry,
  store,
  secretPatterns = DEFAULT_SECRET_PATTERNS,
}: {
  registry: ToolRegistry;
  store: IdempotencyStore;
  /** The worker's redaction patterns, for what the log and a reason show of an error. */
  secretPatterns?: readonly RegExp[];
}) {
  const guarded = guardStore(store);
  return async function lookupStatus({
    taskId,
    callId,
    tool: name,
    args,
    receiptOnly,
    beforeFirstRun,
  }: LookupStatusInput): Promise<StatusLookup> {
    const tool = registry.get(name);
    if (!tool) return { state: 'unknown', reason: `no tool named "${name}" on this worker` };
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) return { state: 'unknown', reason: 'the arguments no longer fit the tool schema' };
    const idempotencyKey = intentKey(tool, parsed.data, taskId);
    let record: IntentRecord | undefined;
    try {
      record = await retryStoreCall({ operation: `read intent ${idempotencyKey}`, call: () => guarded.get(idempotencyKey) });
    } catch (error) {
      if (!IntentStoreError.isInstance(error)) throw error;
      Context.current().log.warn('idempotency store unreachable during a status lookup', {
        tool: name,
        callId,
        message: redactText(error.message, secretPatterns),
      });
      return { state: 'unknown', reason: redactText(error.message, secretPatterns) };
    }
    const stored: ToolResult | undefined = record?.state === 'committed' ? record.receipt : undefined;
    // The call that committed the receipt, so that a repeat of it is known as one (a receipt recorded where nothing was claimed has none).
    const fromStore = (receipt: ToolResult): StatusLookup => ({
      state: 'applied',
      receipt,
      source: 'store',
      ...(record?.callId ? { callId: record.callId } : {}),
    });
    if (receiptOnly) {
      if (stored) return fromStore(stored);
      return record
        ? { state: 'unknown', reason: `started earlier (call ${record.callId}) with no receipt yet` }
        : { state: 'not_applied' };
    }
    if (!tool.status) {
      if (stored) return fromStore(stored);
      return record
        ? { state: 'unknown', reason: `started earlier (call ${record.callId}) and never confirmed` }
        : { state: 'not_applied' };
    }
    const checked = await askStatusCheck({ tool, args: parsed.data, taskId, idempotencyKey, secretPatterns });
    if (checked.state === 'applied') {
      if (stored) return fromStore(stored);
      try {
        await guarded.recordApplied({
          key: idempotencyKey,
          taskId,
          tool: name,
          argsDigest: argsDigest(parsed.data),
          receipt: checked.receipt,
        });
      } catch (error) {
        // The check is the authority; a receipt that could not be recorded costs only a later check.
        if (!IntentStoreError.isInstance(error)) throw error;
        Context.current().log.warn('could not record a receipt the status check found', {
          tool: name,
          callId,
          message: redactText(error.message, secretPatterns),
        });
      }
      return checked;
    }
    if (checked.state === 'not_applied') {
      if (inFlight(record, Date.now()))
        return {
          state: 'unknown',
          reason: `call ${record!.callId} started this intent at ${record!.startedAt} and may still be applying it (until ${record!.leaseExpiresAt})`,
          inFlightForMs: Math.max(0, Date.parse(record!.leaseExpiresAt!) - Date.now()),
        };
      return checked;
    }
    if (stored) return fromStore(stored);
    // Before the call's first run, no row means no attempt of the intent was ever claimed in this task,
    // so none can have taken effect. After a run a missing row proves nothing (a handler's failure
    // releases its row, and it may have come after the effect): what the check cannot tell stays unknown.
    if (!record && beforeFirstRun) return { state: 'not_applied' };
    return checked;
  };
}
