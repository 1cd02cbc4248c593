// What a deploy test reads from a workflow's history (the builds that completed its tasks, the
// workers that ran its activities, its first activity) and from a deployment's status.
import type { Client } from '@temporalio/client';
import type { BuildStatus } from '../../client/deployments';

export type HistoryEvent = {
  eventType?: string | number | null;
  workflowTaskCompletedEventAttributes?: { deploymentVersion?: { buildId?: string | null } | null } | null;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null;
  activityTaskStartedEventAttributes?: { identity?: string | null } | null;
};

export async function events(client: Client, workflowId: string, runId?: string): Promise<HistoryEvent[]> {
  return ((await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? []) as HistoryEvent[];
}

/** The builds that completed the workflow's tasks, in order, without repeats. */
export function buildsOf(history: HistoryEvent[]): string[] {
  const builds = history.flatMap((event) => {
    const buildId = event.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId;
    return buildId ? [buildId] : [];
  });
  return [...new Set(builds)];
}

/** The identities of the workers that started the workflow's activities, in order, without repeats. */
export const identitiesOf = (history: HistoryEvent[]) => [
  ...new Set(
    history.flatMap((event) =>
      event.activityTaskStartedEventAttributes?.identity ? [event.activityTaskStartedEventAttributes.identity] : [],
    ),
  ),
];

/** The name of the first activity the workflow scheduled. */
export const firstActivityOf = (history: HistoryEvent[]) =>
  history.find((event) => event.activityTaskScheduledEventAttributes)?.activityTaskScheduledEventAttributes?.activityType?.name;

/** One build's entry in a deployment's status. */
export async function build(status: Promise<{ builds: BuildStatus[] }>, buildId: string): Promise<BuildStatus> {
  const found = (await status).builds.find((entry) => entry.buildId === buildId);
  if (!found) throw new Error(`build ${buildId} is not listed`);
  return found;
}
