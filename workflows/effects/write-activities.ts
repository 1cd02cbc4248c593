import type { LocalActivityOptions } from '@temporalio/common';
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../common/activity-types';
import { ACTIVITY_GRACE_MS } from '../../common/activity-types';
import { EFFECT_TRAITS } from '../../common/effects';
import { FAILURE_TYPE } from '../../common/failures';
import type { RunnableCall } from './effect-strategy';
import { activitySummary } from './activity-summary';

/**
 * The status lookup of one call, a local activity (in the worker that runs the workflow task: one
 * marker event and no round trip through the server). It only reads, so it may be retried freely.
 */
export function lookupActivity(call: RunnableCall) {
  const options: LocalActivityOptions = {
    startToCloseTimeout: '30 seconds',
    summary: `status of ${activitySummary(call)}`,
    retry: { maximumAttempts: 3, initialInterval: '200 ms', nonRetryableErrorTypes: [FAILURE_TYPE.invalid_arguments] },
  };
  return proxyLocalActivities<Activities>(options).lookupStatus;
}

/**
 * The write activity: exactly one attempt; whatever cut it off is decided by the strategy, never by a
 * retry. An approved irreversible call also carries its schedule-to-start bound (its policy's).
 */
export function writeActivity(call: RunnableCall) {
  const { scheduleToStartMs } = call.policy;
  return proxyActivities<Activities>({
    startToCloseTimeout: call.policy.timeoutMs + ACTIVITY_GRACE_MS,
    // A worker that died mid-call is noticed after the heartbeat timeout, not the whole timeout: the call is then cut off like any other.
    ...(call.policy.heartbeatTimeoutMs !== undefined ? { heartbeatTimeout: call.policy.heartbeatTimeoutMs } : {}),
    ...(EFFECT_TRAITS[call.policy.effect].scheduleToStartBound && scheduleToStartMs !== undefined
      ? { scheduleToStartTimeout: scheduleToStartMs }
      : {}),
    summary: activitySummary(call),
    retry: { maximumAttempts: 1 },
  }).runTool;
}
