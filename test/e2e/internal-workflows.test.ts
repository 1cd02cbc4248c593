// Tollgate's internal workflows (the tool catalogue the web inbox asks) stay out of the lists people
// read, the Web UI's default one included, and are found by the queries docs/watching.md names.
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askToolCatalogue } from '../../client/ask-tool-catalogue';
import { INTERNAL_WORKFLOW_ID_PREFIX } from '../../common/internal-workflows';
import { startDevServerEnvironment } from '../../testing/servers';
import { createWorker } from '../../worker/create-worker';
import { bundleWorkflows } from '../helpers/servers';
import { testConfig } from '../helpers/test-config';
import { until } from '../helpers/until';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startDevServerEnvironment();
});

afterAll(async () => {
  await env?.teardown();
});

/** The workflow ids a list query answers (the default list when `query` is left out). */
async function listed(query?: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of env.client.workflow.list(query ? { query } : {})) ids.push(execution.workflowId);
  return ids;
}

describe("Tollgate's internal workflows", () => {
  it('keep the tool catalogue out of the default list, and are listed by the documented queries', async () => {
    const taskQueue = `catalogue-${randomUUID()}`;
    const base = testConfig();
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const worker = await createWorker({ config, connection: env.nativeConnection, workflowBundle: await bundleWorkflows() });
    // A workflow of someone's own, which the default list must still show (nothing serves it).
    const theirs = `their-order-${randomUUID()}`;
    await env.client.workflow.start('shipOrder', { taskQueue: `nobody-${randomUUID()}`, workflowId: theirs });

    const catalogue = await worker.runUntil(() => askToolCatalogue(env.client, taskQueue));
    expect(catalogue.tools.map((tool) => tool.name)).toContain('send_message');

    const internal = await until('the catalogue run in its division', async () => {
      const found = (await listed("TemporalNamespaceDivision = 'tollgate'")).filter((id) => id.startsWith(INTERNAL_WORKFLOW_ID_PREFIX));
      return found.length > 0 ? found : undefined;
    });
    expect(internal).toHaveLength(1);
    expect(internal[0]).toMatch(/^tollgate-internal-tool-catalogue-[0-9a-f-]{36}$/);
    // The default list (what the Web UI and `temporal workflow list` show) has the user's workflow and not the catalogue's.
    const shown = await until('their workflow in the default list', async () => {
      const ids = await listed();
      return ids.includes(theirs) ? ids : undefined;
    });
    expect(shown.filter((id) => id.startsWith(INTERNAL_WORKFLOW_ID_PREFIX))).toEqual([]);
    expect(await listed(`WorkflowId = '${internal[0]}'`)).toEqual([]);
    // With the division named, the id prefix finds them too.
    expect(await listed(`TemporalNamespaceDivision = 'tollgate' AND WorkflowId STARTS_WITH '${INTERNAL_WORKFLOW_ID_PREFIX}'`)).toEqual(
      internal,
    );
  });
});
