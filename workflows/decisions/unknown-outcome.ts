import { condition, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../common/activity-types';
import type { BoundaryResult } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { ToolResult } from '../../common/contract/tools';
import type { EffectContext } from '../effects/effect-strategy';

const { resolveIntent } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  summary: 'record a resolution',
  retry: { maximumAttempts: 5, initialInterval: '500 ms' },
});

/** What became of a write whose outcome was unknown. */
export type Reconciled = { verdict: 'settled'; outcome: BoundaryResult } | { verdict: 'not_applied'; resolver: string };

/**
 * A write whose outcome is unknown: under `ask`, waits for a person's `resolve` (at most
 * `outcomes.resolveTimeout`). `applied` commits the intent with a receipt saying who resolved it
 * and settles the call as a success; `not_applied` gives the intent up in the store and leaves it to
 * the strategy to run again. No resolution in time, or `report`, settles it as `outcome_unknown`.
 */
export async function resolveUnknown(
  { taskId, call, resolutions }: Pick<EffectContext, 'taskId' | 'call' | 'resolutions'>,
  reason: string,
  executions: number,
): Promise<Reconciled> {
  const unknown: Reconciled = { verdict: 'settled', outcome: BoundaryResults.outcomeUnknown(reason, executions) };
  if (!resolutions || resolutions.mode !== 'ask') return unknown;
  const since = Date.now();
  resolutions.open({
    callId: call.callId,
    tool: call.tool,
    args: call.redactedValues ? call.shownArgs : call.args,
    argsDigest: call.argsDigest,
    ...(call.redactedValues ? { shownDigest: call.shownDigest } : {}),
    reason,
    since: new Date(since).toISOString(),
    expiresAt: new Date(since + resolutions.timeoutMs).toISOString(),
  });
  const resolved = await condition(() => resolutions.has(call.callId), resolutions.timeoutMs, {
    summary: `resolution of ${call.callId}: ${call.summary ?? call.tool}`,
  });
  resolutions.close(call.callId);
  if (!resolved) {
    const waited = `${Math.round(resolutions.timeoutMs / 1000)} s`;
    return { verdict: 'settled', outcome: BoundaryResults.outcomeUnknown(`${reason}; nobody resolved it within ${waited}`, executions) };
  }
  const { outcome, resolver = 'a person', note } = resolutions.take(call.callId)!;
  const base = { taskId, callId: call.callId, tool: call.tool, args: call.args, resolver };
  if (outcome === 'not_applied') {
    await resolveIntent({ ...base, outcome });
    return { verdict: 'not_applied', resolver };
  }
  const receipt: ToolResult = {
    status: 'success',
    data: { resolvedByPerson: true, resolver, ...(note ? { note } : {}), message: `${resolver} said this call took effect` },
  };
  await resolveIntent({ ...base, outcome, receipt });
  return { verdict: 'settled', outcome: BoundaryResults.fromReceipt(receipt, executions) };
}

/** Gives up the started record of a write its status check found not applied, so that it may run again after a new approval. */
export async function releaseNotApplied({ taskId, call }: Pick<EffectContext, 'taskId' | 'call'>): Promise<void> {
  await resolveIntent({ taskId, callId: call.callId, tool: call.tool, args: call.args, outcome: 'not_applied', resolver: 'status check' });
}
