import type { TurnLineage } from '../../common/contract/turn';
import { DEFAULT_TURN_LIMITS } from '../../common/defaults';
import type { TurnRun } from '../turn/turn-run';

/** How a turn naming no agent stands in a lineage path. */
export const DEFAULT_AGENT_PATH_NAME = 'default';

/** The agents from the root down to this turn, its current agent last (a handoff may have changed it since its start). */
export function pathOf(run: Pick<TurnRun, 'input' | 'agent'>): string[] {
  const current = run.agent?.name ?? DEFAULT_AGENT_PATH_NAME;
  const above = run.input.lineage?.path.slice(0, -1) ?? [];
  return [...above, current];
}

/** The lineage a child turn started for one of this turn's delegate calls carries. */
export function childLineage({
  run,
  workflowId,
  callId,
  agent,
  request,
}: {
  run: Pick<TurnRun, 'input' | 'agent'>;
  workflowId: string;
  callId: string;
  agent: string;
  request: string;
}): TurnLineage {
  const lineage = run.input.lineage;
  return {
    rootWorkflowId: lineage?.rootWorkflowId ?? workflowId,
    parentWorkflowId: workflowId,
    parentCallId: callId,
    path: [...pathOf(run), agent],
    request,
    depth: (lineage?.depth ?? 0) + 1,
  };
}

/**
 * Why delegating to `agent` must not go on, or nothing: the child would stand deeper than
 * `limits.maxDepth`, or the agent is already on the path from the root (a cycle A → B → A).
 */
export function delegationRefusal(run: Pick<TurnRun, 'input' | 'agent' | 'settings'>, agent: string): string | undefined {
  const path = pathOf(run);
  const shown = [...path, agent].join(' → ');
  if (path.includes(agent)) return `${shown}: agent ${agent} is already on the path (a cycle); delegation refused`;
  // A turn recorded before delegation existed has no maxDepth in its settings.
  const maxDepth = run.settings.limits.maxDepth ?? DEFAULT_TURN_LIMITS.maxDepth;
  const depth = (run.input.lineage?.depth ?? 0) + 1;
  if (depth > maxDepth) return `${shown} would be ${depth} levels deep, past limits.maxDepth ${maxDepth}; delegation refused`;
  return undefined;
}

/** What is wrong with a turn input's `lineage`, or nothing: a child turn's place in its tree is checked like the rest of its input. */
export function lineageProblem(lineage: unknown): string | undefined {
  if (!lineage || typeof lineage !== 'object' || Array.isArray(lineage)) return 'lineage must be an object';
  const { rootWorkflowId, parentWorkflowId, parentCallId, path, request, depth } = lineage as Record<string, unknown>;
  for (const [name, value] of Object.entries({ rootWorkflowId, parentWorkflowId, parentCallId })) {
    if (typeof value !== 'string' || value === '') return `lineage.${name} must be a non-empty string`;
  }
  if (typeof request !== 'string') return 'lineage.request must be a string';
  if (typeof depth !== 'number' || !Number.isInteger(depth) || depth < 1) return 'lineage.depth must be a whole number of at least 1';
  if (!Array.isArray(path) || path.some((name) => typeof name !== 'string' || !/^[a-z][a-z0-9_-]{0,63}$/.test(name)))
    return 'lineage.path must be a list of agent names';
  if (path.length !== depth + 1) return `lineage.path must name ${depth + 1} agents for depth ${depth}, it names ${path.length}`;
  return undefined;
}
