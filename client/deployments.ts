import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { WAITING_FOR_SEARCH_ATTRIBUTE } from '../common/search-attributes';
import type { TurnState } from '../common/contract/turn';
import { stateQuery } from '../workflows/messages';
import { TollgateError } from '../common/tollgate-error';

const { WorkerDeploymentVersionStatus } = temporal.api.enums.v1;

/**
 * Where a build stands: `current` takes new turns, `ramping` a share of them, `draining` takes no
 * new turns but still runs some, `drained` runs none (safe to stop), `inactive` never took any.
 */
export type BuildState = 'current' | 'ramping' | 'draining' | 'drained' | 'inactive';

/** One build of a deployment, as `tollgate deploy status` shows it. */
export interface BuildStatus {
  buildId: string;
  state: BuildState;
  /** The share of new turns a ramping build takes, in percent. */
  rampPercent?: number;
  /** What Temporal itself reports (its drainage status is refreshed every few minutes). */
  temporalStatus: string;
  /** Running workflows pinned to this build: turns and conversations. */
  openTurns: number;
  openConversations: number;
  /** Of the open turns, those waiting for a person (approval, resolution, resume), and the oldest of those waits. */
  waitingForPerson: number;
  oldestWait?: { workflowId: string; kind: string; since: string };
  /** Only when nothing runs on it and no new turn can reach it. */
  safeToStop: boolean;
}

export interface DeploymentStatus {
  deploymentName: string;
  builds: BuildStatus[];
}

/** A deployment that the server does not know (no worker of it has polled yet). */
export class DeploymentNotFoundError extends TollgateError {
  static override readonly marker = 'tollgate.error.DeploymentNotFoundError';
  override name = 'DeploymentNotFoundError';
}

const GRPC_NOT_FOUND = 5;

function statusName(status: number | null | undefined): string {
  const name = WorkerDeploymentVersionStatus[status ?? 0] ?? 'UNSPECIFIED';
  return name.replace('WORKER_DEPLOYMENT_VERSION_STATUS_', '').toLowerCase();
}

/** A visibility query's string literal (the value escaped as the query language wants). */
function literal(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The oldest wait for a person among a turn's pending entries. */
function oldestPending(state: TurnState): { kind: string; since: string } | undefined {
  const waits = [
    ...state.pendingApprovals.map((entry) => ({ kind: 'approval', since: entry.requestedAt })),
    ...(state.pendingResolutions ?? []).map((entry) => ({ kind: 'resolution', since: entry.since })),
    ...(state.pendingResume ? [{ kind: 'resume', since: state.pendingResume.since }] : []),
  ];
  return waits.sort((a, b) => Date.parse(a.since) - Date.parse(b.since))[0];
}

/**
 * What runs on one build, counted from visibility (`TemporalWorkerDeploymentVersion`); each turn
 * waiting for a person is asked its state for when its wait began.
 */
async function buildLoad(client: Client, deploymentName: string, buildId: string) {
  const running = `TemporalWorkerDeploymentVersion = ${literal(`${deploymentName}:${buildId}`)} AND ExecutionStatus = 'Running'`;
  const count = async (query: string) => Number((await client.workflow.count(query)).count);
  const openTurns = await count(`${running} AND WorkflowType = 'agentTurn'`);
  const openConversations = await count(`${running} AND WorkflowType = 'conversation'`);
  let waitingForPerson = 0;
  let oldestWait: BuildStatus['oldestWait'];
  const waiting = `${running} AND ${WAITING_FOR_SEARCH_ATTRIBUTE.name} IN ('approval', 'resolution', 'resume')`;
  for await (const execution of client.workflow.list({ query: waiting })) {
    waitingForPerson++;
    const state = await client.workflow
      .getHandle(execution.workflowId, execution.runId)
      .query(stateQuery)
      .catch(() => undefined);
    const wait = state && oldestPending(state);
    // Waits that began in the same millisecond are ordered by workflow id, so the answer does not depend on the list's order.
    const earlier =
      wait &&
      (!oldestWait ||
        Date.parse(wait.since) < Date.parse(oldestWait.since) ||
        (Date.parse(wait.since) === Date.parse(oldestWait.since) && execution.workflowId < oldestWait.workflowId));
    if (earlier) oldestWait = { workflowId: execution.workflowId, ...wait };
  }
  return { openTurns, openConversations, waitingForPerson, oldestWait };
}

/**
 * Every build of a deployment: where it stands, what still runs on it, what waits on it for a
 * person. A build is `drained` (safe to stop) only when it is neither current nor ramping and no
 * workflow pinned to it runs, whatever Temporal's periodically refreshed drainage status says.
 */
export async function deploymentStatus(client: Client, deploymentName: string): Promise<DeploymentStatus> {
  let info;
  try {
    info = (await client.workflowService.describeWorkerDeployment({ namespace: client.options.namespace, deploymentName }))
      .workerDeploymentInfo;
  } catch (error) {
    if ((error as { code?: number }).code === GRPC_NOT_FOUND)
      throw new DeploymentNotFoundError(
        `no worker deployment "${deploymentName}" in namespace ${client.options.namespace}: no worker of it has polled yet`,
      );
    throw error;
  }
  const rampPercent = info?.routingConfig?.rampingVersionPercentage ?? 0;
  const builds: BuildStatus[] = [];
  for (const summary of info?.versionSummaries ?? []) {
    const buildId = summary.deploymentVersion?.buildId ?? '';
    const temporalStatus = statusName(summary.status);
    const load = await buildLoad(client, deploymentName, buildId);
    const open = load.openTurns + load.openConversations;
    let state: BuildState;
    if (temporalStatus === 'current') state = 'current';
    else if (temporalStatus === 'ramping') state = 'ramping';
    else if (open > 0) state = 'draining';
    else state = temporalStatus === 'inactive' ? 'inactive' : 'drained';
    builds.push({
      buildId,
      state,
      ...(state === 'ramping' ? { rampPercent } : {}),
      temporalStatus,
      ...load,
      safeToStop: (state === 'drained' || state === 'inactive') && open === 0,
    });
  }
  const order: BuildState[] = ['current', 'ramping', 'draining', 'drained', 'inactive'];
  builds.sort((a, b) => order.indexOf(a.state) - order.indexOf(b.state) || a.buildId.localeCompare(b.buildId));
  return { deploymentName, builds };
}

/** What a promotion did, and the `temporal` command that does the same. */
export interface Promotion {
  deploymentName: string;
  buildId: string;
  rampPercent?: number;
  previous?: string;
  temporalCommand: string;
}

/**
 * Makes a build current (new turns start on it; pinned turns stay where they are), or with
 * `rampPercent` lets it take that share of new turns beside the current one. The server refuses a
 * build none of whose workers polls, or one that does not poll every task queue the current build
 * does; its message is passed on.
 */
export async function promoteBuild(
  client: Client,
  {
    deploymentName,
    buildId,
    rampPercent,
    identity = 'tollgate deploy',
  }: { deploymentName: string; buildId: string; rampPercent?: number; identity?: string },
): Promise<Promotion> {
  const namespace = client.options.namespace;
  if (rampPercent !== undefined && !(Number.isFinite(rampPercent) && rampPercent >= 0 && rampPercent <= 100))
    throw new RangeError(`--ramp: ${rampPercent} is not a percentage from 0 to 100`);
  const base = `temporal worker deployment --namespace ${namespace} --deployment-name ${deploymentName} --build-id ${buildId}`;
  if (rampPercent === undefined) {
    const answer = await client.workflowService.setWorkerDeploymentCurrentVersion({ namespace, deploymentName, buildId, identity });
    const previous = answer.previousDeploymentVersion?.buildId || undefined;
    return {
      deploymentName,
      buildId,
      ...(previous && previous !== buildId ? { previous } : {}),
      temporalCommand: base.replace('deployment --', 'deployment set-current-version --'),
    };
  }
  const answer = await client.workflowService.setWorkerDeploymentRampingVersion({
    namespace,
    deploymentName,
    buildId,
    percentage: rampPercent,
    identity,
  });
  const previous = answer.previousDeploymentVersion?.buildId || undefined;
  return {
    deploymentName,
    buildId,
    rampPercent,
    ...(previous && previous !== buildId ? { previous } : {}),
    temporalCommand: `${base.replace('deployment --', 'deployment set-ramping-version --')} --percentage ${rampPercent}`,
  };
}
