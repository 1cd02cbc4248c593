import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { WRITE_INTERRUPTED, type BoundaryResult, type RunToolInput } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { STORE_FAULT_RETRY } from '../../common/defaults';
import { EFFECT_TRAITS } from '../../common/effects';
import { handlerEndMove } from '../../common/write-intent/executor-moves';
import { IntentStoreError, type IdempotencyStore, type WriteEffect } from '../../intents/intent-store';
import { argsDigest } from '../../tools/canonical-json';
import type { ToolDefinition } from '../../tools/define-tool';
import { intentKey } from '../../tools/intent-key';
import { askStatusCheck } from './lookup-status';
import { redactText } from './redact';
import { retryStoreCall } from './retry-store-call';
import { timedOut, type HandlerRun } from './run-handler';
import { claimWrite, type WriteClaim } from './write-claim';

/** One write's claim, with the store calls around it: logged, retried, or best effort. */
function writeClaim(store: IdempotencyStore, tool: ToolDefinition, args: unknown, input: RunToolInput, secretPatterns: readonly RegExp[]) {
  const context = Context.current();
  const key = intentKey(tool, args, input.taskId);
  const effect = tool.effect as WriteEffect;
  // This attempt's claim token: a claim tried again after a lost answer finds its own record, and commit, release and endLease name it.
  const token = randomUUID();
  const logStoreFault = (what: string, error: unknown) =>
    context.log.warn(what, {
      tool: tool.name,
      callId: input.callId,
      key,
      message: redactText(error instanceof Error ? error.message : String(error), secretPatterns),
    });
  let claimTryFailed = false;
  const write: WriteClaim = {
    store,
    tool,
    executorTool: { traits: EFFECT_TRAITS[effect], hasStatusCheck: typeof tool.status === 'function' },
    key,
    callId: input.callId,
    taskId: input.taskId,
    argsDigest: argsDigest(args),
    claim: (supersede) =>
      retryStoreCall({
        operation: `claim intent ${key}`,
        call: () =>
          store.claim({
            key,
            taskId: input.taskId,
            tool: tool.name,
            callId: input.callId,
            argsDigest: argsDigest(args),
            effect,
            leaseMs: tool.timeoutMs,
            supersede,
            owner: token,
          }),
        onFailure: (error, tries) => {
          claimTryFailed = true;
          logStoreFault(`idempotency store failed a claim (try ${tries}), before the handler ran`, error);
        },
      }),
    claimTryFailed: () => claimTryFailed,
    check: () => askStatusCheck({ tool, args, taskId: input.taskId, idempotencyKey: key, secretPatterns }),
    // A store write whose failure costs only a later lookup: the verdict in hand stands either way.
    bestEffort: (what, work) =>
      work().catch((error: unknown) => {
        if (!IntentStoreError.isInstance(error)) throw error;
        logStoreFault(what, error);
      }),
  };
  return { write, token, logStoreFault };
}

/**
 * How the boundary runs a write: the intent's key is recorded as started before the handler runs
 * and committed with the receipt after it; an intent already committed is answered from its receipt
 * without running the handler; a handler cut off mid-way is thrown as `write_interrupted`, which the
 * workflow never retries blindly. The moves are the write protocol's (`common/write-intent/`).
 */
export function createWriteExecutor({
  handler,
  store,
  secretPatterns,
}: {
  handler: HandlerRun;
  store?: IdempotencyStore;
  secretPatterns: readonly RegExp[];
}) {
  return async function runWrite(tool: ToolDefinition, args: unknown, input: RunToolInput): Promise<BoundaryResult> {
    if (!store) throw new Error(`tool ${tool.name} is a write, and this worker has no idempotency store`);
    const context = Context.current();
    const { write, token, logStoreFault } = writeClaim(store, tool, args, input, secretPatterns);
    const { key } = write;
    let before: Awaited<ReturnType<typeof claimWrite>>;
    try {
      before = await claimWrite(write);
    } catch (error) {
      if (!IntentStoreError.isInstance(error)) throw error;
      // The claim failed, so the handler never ran: nothing happened. A claim that did reach the store with its answer lost is given up.
      await write.bestEffort('could not give up a claim whose answer was lost', () => store.release({ key, owner: token }));
      const message = `${tool.name} did not run, nothing happened: ${error.message}; it was tried for ${STORE_FAULT_RETRY.windowMs / 1000} s, and the call may be made again`;
      return { ...BoundaryResults.notRun(message), idempotency: 'store_failed' };
    }
    if ('answer' in before) return before.answer;
    const { owner } = before;
    const end = await handler.run(tool, args, input, key);
    if (!end.started) {
      // Nothing ran: the attempt is given up, so the next lookup finds it not applied rather than in flight.
      await write.bestEffort('could not give up an attempt that never started', () => store.release({ key, owner }));
      return {
        ...BoundaryResults.failure('transient_failure', handler.notStarted(tool, end.reason), { executions: 0 }),
        idempotency: 'claimed',
      };
    }
    const normalized = end.interrupted ? undefined : handler.normalize(tool, end.outcome, Math.max(context.info.attempt, 1));
    const move = handlerEndMove({
      interrupted: end.interrupted,
      timedOut: timedOut(end),
      success: normalized?.result.status === 'success',
    });
    if (!normalized) {
      // A handler that threw has stopped, so the attempt is no longer in flight; one cut off by the timeout may still be applying.
      if (move === 'end_lease') await write.bestEffort('could not end a lease', () => store.endLease({ key, owner }));
      throw ApplicationFailure.create({
        type: WRITE_INTERRUPTED,
        message: redactText(end.outcome.ok ? 'interrupted' : end.outcome.message, secretPatterns),
        nonRetryable: true,
        details: [{ executions: 1 }],
      });
    }
    try {
      // False: another claim holds the intent now (this attempt's lease ran out meanwhile); its record is left as it is.
      if (move === 'commit' && !(await store.commit({ key, owner, receipt: normalized.result })))
        context.log.warn('a late commit changed nothing: the intent is committed already or held by a newer claim', {
          tool: tool.name,
          callId: input.callId,
          key,
        });
      if (move === 'release') await store.release({ key, owner });
    } catch (error) {
      // The handler ran: its verdict stands, and the intent stays started, so a later lookup says unknown rather than not applied.
      if (!IntentStoreError.isInstance(error)) throw error;
      logStoreFault('idempotency store failed after a write', error);
    }
    return { ...normalized, idempotency: 'claimed' };
  };
}
