// The floor the benchmarks compare Tollgate with: the same handlers as bare Temporal activities.
import { condition, defineQuery, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { BareActivities } from './bench-tools';

const { bareLookup, barePutNote, bareSendNote, bareModelStep } = proxyActivities<BareActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** Which call of `bareApprovedSends` waits for its go-ahead (-1: none). */
export const bareWaitingQuery = defineQuery<number>('bareWaiting');
/** The go-ahead for one call of `bareApprovedSends`. */
export const bareApproveSignal = defineSignal<[number]>('bareApprove');

/** `calls` bare activity calls one after another; each call's duration in workflow time (ms). */
export async function bareCalls(kind: 'read' | 'write', calls: number, prefix: string): Promise<number[]> {
  const durations: number[] = [];
  for (let call = 0; call < calls; call++) {
    const started = Date.now();
    if (kind === 'read') await bareLookup(`query ${call}`);
    else await barePutNote(`${prefix}-${call}`, `note ${call}`);
    durations.push(Date.now() - started);
  }
  return durations;
}

/** `calls` sends, each waiting for a go-ahead signal first (what an approved write is without a boundary). */
export async function bareApprovedSends(calls: number): Promise<number[]> {
  let waiting = -1;
  let approved = -1;
  setHandler(bareWaitingQuery, () => waiting);
  setHandler(bareApproveSignal, (call) => {
    approved = Math.max(approved, call);
  });
  const durations: number[] = [];
  for (let call = 0; call < calls; call++) {
    const started = Date.now();
    waiting = call;
    await condition(() => approved >= call);
    waiting = -1;
    await bareSendNote('requester', `note ${call}`);
    durations.push(Date.now() - started);
  }
  return durations;
}

/** A turn's tool work without a boundary: three reads at once, then one write. */
export async function bareTurn(id: string): Promise<void> {
  await Promise.all([0, 1, 2].map((index) => bareLookup(`${id} ${index}`)));
  await barePutNote(id, `note of ${id}`);
}

/** A bare agent loop: three model steps around the same tool work, with no checks, store or lookups. */
export async function bareAgentLoop(id: string): Promise<void> {
  await bareModelStep(0);
  await Promise.all([0, 1, 2].map((index) => bareLookup(`${id} ${index}`)));
  await bareModelStep(1);
  await barePutNote(id, `note of ${id}`);
  await bareModelStep(2);
}

/** Nothing at all: the events every workflow has. */
export async function bareNothing(): Promise<void> {}

/** One bare call of the given kind (history events per call). */
export async function bareOne(kind: 'read' | 'write' | 'approved'): Promise<void> {
  if (kind === 'read') await bareLookup('one');
  else if (kind === 'write') await barePutNote('one', 'note');
  else await bareApprovedSends(1);
}
