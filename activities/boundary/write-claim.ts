import type { BoundaryResult } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { ToolResult } from '../../common/contract/tools';
import type { IdempotencyOutcome } from '../../common/telemetry';
import { proofBeforeRun, refusedClaimMove, unknownHolder, type ExecutorTool } from '../../common/write-intent/executor-moves';
import type { ClaimResult, IdempotencyStore } from '../../intents/intent-store';
import type { ToolDefinition } from '../../tools/define-tool';
import type { StatusLookup } from '../../common/activity-types';

/** What a write's claim needs: the guarded store, the intent, and the store calls its executor wraps. */
export interface WriteClaim {
  store: IdempotencyStore;
  tool: ToolDefinition;
  executorTool: ExecutorTool;
  key: string;
  callId: string;
  taskId: string;
  argsDigest: string;
  /** Claims the intent (retried within the store's window); `supersede` names a stale receipt to replace. */
  claim: (supersede?: string) => Promise<ClaimResult>;
  /** Whether a claim try failed: its answer may have been lost after the store took a record over. */
  claimTryFailed: () => boolean;
  /** The tool's own status check, asked once. */
  check: () => Promise<StatusLookup>;
  /** A store write whose failure costs only a later lookup. */
  bestEffort: (what: string, work: () => Promise<unknown>) => Promise<unknown>;
}

/** A write settled from a receipt, nothing run. */
export function fromReceipt(receipt: ToolResult, idempotency: IdempotencyOutcome = 'receipt'): BoundaryResult {
  return { ...BoundaryResults.fromReceipt(receipt, 0), idempotency };
}

/** A write whose outcome this call cannot tell, nothing run. */
export function unknownOutcome(message: string, idempotency: IdempotencyOutcome): BoundaryResult {
  return { ...BoundaryResults.outcomeUnknown(message, 0), idempotency };
}

/** A claim the store refused: answered from the receipt, by the tool's check, or as unknown; never run. */
async function refused(write: WriteClaim, claim: ClaimResult & { claimed: false }): Promise<BoundaryResult> {
  const { record } = claim;
  const { store, tool, key, taskId } = write;
  const move = refusedClaimMove(record, write.executorTool, true);
  if (move === 'receipt') return fromReceipt(record.receipt!);
  if (move === 'check') {
    const checked = await write.check();
    if (checked.state === 'applied') {
      const { receipt } = checked;
      await write.bestEffort('could not record a receipt the status check found', () =>
        store.recordApplied({ key, taskId, tool: tool.name, argsDigest: write.argsDigest, receipt }),
      );
      return fromReceipt(receipt, 'status_check');
    }
  }
  return unknownHolder(record, Date.now()) === 'in_flight'
    ? unknownOutcome(
        `${tool.name} is being run by call ${record.callId} (started ${record.startedAt}); it is not run a second time`,
        'in_flight',
      )
    : unknownOutcome(`${tool.name} was started before (call ${record.callId}) and never confirmed; it is not run again`, 'unconfirmed');
}

/**
 * Before the handler: the claim, or the answer that makes running it unnecessary or unsafe. A
 * refused claim never runs; a won claim that took over another call's attempt runs only after the
 * tool's check says it did not apply (applied → its receipt committed; cannot tell → unknown).
 */
export async function claimWrite(write: WriteClaim): Promise<{ answer: BoundaryResult } | { owner: string }> {
  const { store, tool } = write;
  let claim = await write.claim();
  if (!claim.claimed && refusedClaimMove(claim.record, write.executorTool, false) === 'recheck') {
    if ((await write.check()).state === 'not_applied') claim = await write.claim(claim.record.owner);
  }
  if (!claim.claimed) return { answer: await refused(write, claim) };
  const { owner } = claim;
  if (proofBeforeRun(claim, { callId: write.callId, claimTryFailed: write.claimTryFailed(), tool: write.executorTool })) {
    const earlier = claim.replaced?.callId ?? 'unknown, a claim try lost its answer';
    const checked = await write.check();
    if (checked.state === 'applied') {
      const { receipt } = checked;
      await write.bestEffort('could not commit a receipt the status check found', () => store.commit({ key: write.key, owner, receipt }));
      return { answer: fromReceipt(receipt, 'status_check') };
    }
    if (checked.state === 'unknown') {
      await write.bestEffort('could not end a lease', () => store.endLease({ key: write.key, owner }));
      const message = `${tool.name} was started before (call ${earlier}) and ${checked.reason}; it is not run again`;
      return { answer: unknownOutcome(message, 'unconfirmed') };
    }
  }
  return { owner };
}
