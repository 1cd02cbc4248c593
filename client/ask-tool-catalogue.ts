import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { ToolCatalogue } from '../common/contract/tools';
import { TOOL_CATALOGUE_WORKFLOW_TYPE } from '../common/defaults';
import { INTERNAL_DIVISION, INTERNAL_WORKFLOW_ID_PREFIX, NAMESPACE_DIVISION_SEARCH_ATTRIBUTE } from '../common/internal-workflows';

/** Clients whose server refused the namespace division once: asked without it from then on. */
const refusingDivision = new WeakSet<Client>();

/**
 * The tools the workers of a task queue serve, from the `toolCatalogue` workflow run on it. The run
 * is one of Tollgate's internal workflows: it is started in Tollgate's namespace division, so it stays
 * out of the Web UI's default list (and of `temporal workflow list`), with an id that says what it is.
 * A server that refuses the division (it is a system attribute) gets the run without it.
 */
export async function askToolCatalogue(client: Client, taskQueue: string): Promise<ToolCatalogue> {
  const start = (divided: boolean) =>
    client.workflow.execute(TOOL_CATALOGUE_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: `${INTERNAL_WORKFLOW_ID_PREFIX}tool-catalogue-${randomUUID()}`,
      args: [],
      workflowExecutionTimeout: '1 minute',
      ...(divided ? { typedSearchAttributes: [{ key: NAMESPACE_DIVISION_SEARCH_ATTRIBUTE, value: INTERNAL_DIVISION }] } : {}),
    }) as Promise<ToolCatalogue>;
  if (refusingDivision.has(client)) return start(false);
  try {
    return await start(true);
  } catch (error) {
    if (!/TemporalNamespaceDivision/.test(String((error as Error)?.message))) throw error;
    refusingDivision.add(client);
    return start(false);
  }
}
