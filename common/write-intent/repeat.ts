import type { BoundaryResult, StatusLookup } from '../activity-types';
import { BoundaryResults } from '../boundary-results';
import type { ToolResult } from '../contract/tools';

/** The earlier call of the task a lookup's receipt shows this call repeats (the store's receipt of another call), or none. */
export function repeatOf(status: StatusLookup, callId: string): string | undefined {
  if (status.state !== 'applied' || status.source !== 'store' || !status.callId || status.callId === callId) return undefined;
  return status.callId;
}

/**
 * A repeat answered from the first call's receipt, nothing run and nobody asked: the result says
 * which call it repeats and that it was not run again, so the model need not ask a third time.
 */
export function answerRepeat(receipt: ToolResult, of: string, executions: number): BoundaryResult {
  const message = `this call repeats call ${of}, whose effect already took place; it was not run again, and this is that call's result`;
  return { ...BoundaryResults.fromReceipt({ ...receipt, repeated: { of, message } }, executions), repeatOf: of };
}
