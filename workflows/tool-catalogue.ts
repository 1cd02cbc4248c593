import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../common/activity-types';
import type { ToolCatalogue } from '../common/contract/tools';

const { describeTools } = proxyActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 3 } });

/**
 * The tools the workers of this task queue serve, as the people who decide on their calls are shown
 * them (the web inbox asks it): the description, effect, policy and argument schema each worker
 * declares, from the worker that would run the call, never from a copy kept elsewhere.
 */
export async function toolCatalogue(): Promise<ToolCatalogue> {
  return describeTools();
}
