import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createActivities } from '../../activities';
import type { BoundaryResult } from '../../common/activity-types';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { IdempotencyStore } from '../../intents/intent-store';
import { defineTool } from '../../tools/define-tool';
import { ToolOutcome } from '../../tools/tool-outcome';
import { testConfig } from '../helpers/test-config';

const POSTGRES_URL = 'postgresql://tollgate:pg-secret-pass-7731@db.internal:5432/tollgate';

describe('every activity of a worker redacts what it throws', () => {
  it('a store driver error that echoes the connection URL leaves runTool without the password or the URL', async () => {
    const sqlite = openSqliteStore(':memory:');
    let claims = 0;
    // A store whose driver fails as some do: with the connection string in the message (not an IntentStoreError).
    const store = new Proxy(sqlite, {
      get(target, property, receiver) {
        if (property === 'claim')
          return async () => {
            claims++;
            throw new Error(`connect ECONNREFUSED ${POSTGRES_URL} (password pg-secret-pass-7731)`);
          };
        return Reflect.get(target, property, receiver) as unknown;
      },
    }) as IdempotencyStore;
    let executions = 0;
    const save = defineTool({
      name: 'save_note',
      description: 'Saves a note.',
      input: z.strictObject({ text: z.string().describe('The note.') }),
      effect: 'irreversible_write',
      handler: () => {
        executions++;
        return ToolOutcome.ok({ saved: true });
      },
    });
    const activities = createActivities({
      config: testConfig(),
      tools: [save],
      store,
      modelEnvironment: { env: { TOLLGATE_POSTGRES_URL: POSTGRES_URL } },
    });
    const result = await new MockActivityEnvironment().run(activities.runTool, {
      taskId: 't',
      callId: 'call-0-0',
      tool: 'save_note',
      args: { text: 'hi' },
    });
    // The claim is tried again within the store's retry window, then the call ends as not run: nothing ran.
    expect(claims).toBeGreaterThanOrEqual(1);
    expect(executions).toBe(0);
    expect(result).toMatchObject({ result: { status: 'error', code: 'not_run' }, executions: 0 });
    expect(JSON.stringify(result)).toContain('[redacted]');
    expect(JSON.stringify(result)).not.toMatch(/pg-secret-pass|db\.internal/);
    await sqlite.close();
  });

  it('a large result that echoes a worker secret is kept in the store redacted, as the history has it', async () => {
    const store = openSqliteStore(':memory:');
    const leak = defineTool({
      name: 'read_config',
      description: 'Reads a configuration file that happens to echo a secret.',
      input: z.strictObject({}),
      effect: 'read',
      maxOutputChars: 20_000,
      handler: () => ToolOutcome.ok(`database: ${POSTGRES_URL}\n${'a line of the configuration file. '.repeat(100)}`),
    });
    const activities = createActivities({
      config: testConfig(),
      tools: [leak],
      store,
      modelEnvironment: { env: { TOLLGATE_POSTGRES_URL: POSTGRES_URL } },
    });
    const result: BoundaryResult = await new MockActivityEnvironment().run(activities.runTool, {
      taskId: 't',
      callId: 'call-0-0',
      tool: 'read_config',
      args: {},
    });
    // Over 1,024 characters: kept once by reference, and what the store holds is what the history holds.
    expect(result.kept).toMatchObject({ $ref: 'result', digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const workflowId = new MockActivityEnvironment().context.info.workflowExecution!.workflowId;
    const kept = await store.readContent!(`${workflowId}/call-0-0/${result.kept!.digest}`);
    expect(kept?.content).toBe(JSON.stringify(result.result));
    expect(kept?.content).toContain('[redacted]');
    expect(kept?.content).not.toMatch(/pg-secret-pass|db\.internal/);
    await store.close();
  });
});
