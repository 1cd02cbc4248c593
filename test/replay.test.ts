import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { HISTORY_FOLDER, PRE_PATCH_HISTORY, RECORDED_HISTORY } from './helpers/histories';
import { bundleWorkflows, quietRuntime } from './helpers/servers';

const history = JSON.parse(readFileSync(RECORDED_HISTORY, 'utf8'));

describe('replay of recorded turns', () => {
  it('replays every recorded end-to-end turn on the current workflow code', async () => {
    quietRuntime();
    const files = readdirSync(HISTORY_FOLDER).filter((name) => name.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(2);
    const workflowBundle = await bundleWorkflows();
    for (const file of files) {
      const recorded = JSON.parse(readFileSync(path.join(HISTORY_FOLDER, file), 'utf8'));
      await expect(Worker.runReplayHistory({ workflowBundle }, recorded, file), file).resolves.toBeUndefined();
    }
  });

  it('replays turns from both sides of the status-lookup patch: the lookup as an activity before it, as a local activity after', async () => {
    quietRuntime();
    type Recorded = { events: Array<{ eventType: string; activityTaskScheduledEventAttributes?: { activityType: { name: string } }; markerRecordedEventAttributes?: { markerName: string } }> };
    const lookupsAsActivities = (recorded: Recorded) => recorded.events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType.name === 'lookupStatus').length;
    const localActivityMarkers = (recorded: Recorded) => recorded.events.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity').length;
    const before = JSON.parse(readFileSync(PRE_PATCH_HISTORY, 'utf8')) as Recorded;
    const after = history as Recorded;
    expect([lookupsAsActivities(before), localActivityMarkers(before)]).toEqual([1, 0]);
    expect([lookupsAsActivities(after), localActivityMarkers(after)]).toEqual([0, 1]);
    const workflowBundle = await bundleWorkflows();
    await expect(Worker.runReplayHistory({ workflowBundle }, before, 'before-patch')).resolves.toBeUndefined();
    await expect(Worker.runReplayHistory({ workflowBundle }, after, 'after-patch')).resolves.toBeUndefined();
  });

  it('catches a deliberately non-deterministic change of the workflow', async () => {
    quietRuntime();
    const changed = await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'fixtures', 'changed-workflows.ts'), logger: new DefaultLogger('WARN') });
    await expect(Worker.runReplayHistory({ workflowBundle: changed }, history, 'recorded-turn')).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
