// The floor the benchmarks compare Tollgate with: the same handler as a bare Temporal activity.
import { proxyActivities } from '@temporalio/workflow';

/** The bare activity: the same lookup a Tollgate read tool runs, with no boundary around it. */
export interface BareActivities {
  bareLookup(query: string): Promise<string>;
}

const { bareLookup } = proxyActivities<BareActivities>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 3 } });

/** Calls the bare activity `calls` times in a row; returns each call's duration in workflow time (ms). */
export async function bareReads(calls: number): Promise<number[]> {
  const durations: number[] = [];
  for (let call = 0; call < calls; call++) {
    const started = Date.now();
    await bareLookup(`query ${call}`);
    durations.push(Date.now() - started);
  }
  return durations;
}
