import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { RECORDED_HISTORY } from './helpers/histories';
import { bundleWorkflows, quietRuntime } from './helpers/servers';

const history = JSON.parse(readFileSync(RECORDED_HISTORY, 'utf8'));

describe('replay of recorded turns', () => {
  it('replays the recorded end-to-end turn on the current workflow code', async () => {
    quietRuntime();
    await expect(Worker.runReplayHistory({ workflowBundle: await bundleWorkflows() }, history, 'recorded-turn')).resolves.toBeUndefined();
  });

  it('catches a deliberately non-deterministic change of the workflow', async () => {
    quietRuntime();
    const changed = await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'fixtures', 'changed-workflows.ts'), logger: new DefaultLogger('WARN') });
    await expect(Worker.runReplayHistory({ workflowBundle: changed }, history, 'recorded-turn')).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
