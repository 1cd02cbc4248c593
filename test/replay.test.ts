import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import {
  CONCURRENT_SENDS_BEFORE_PATCH_HISTORY,
  CONCURRENT_SENDS_SERIAL_HISTORY,
  HISTORY_FOLDER,
  PRE_PATCH_HISTORY,
  RECORDED_HISTORY,
  REVERSIBLE_RETRY_BEFORE_PATCH_HISTORY,
  REVERSIBLE_RETRY_HISTORY,
} from './helpers/histories';
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
    type Recorded = {
      events: Array<{
        eventType: string;
        activityTaskScheduledEventAttributes?: { activityType: { name: string } };
        markerRecordedEventAttributes?: { markerName: string };
      }>;
    };
    const lookupsAsActivities = (recorded: Recorded) =>
      recorded.events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType.name === 'lookupStatus').length;
    const localActivityMarkers = (recorded: Recorded) =>
      recorded.events.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity').length;
    const before = JSON.parse(readFileSync(PRE_PATCH_HISTORY, 'utf8')) as Recorded;
    const after = history as Recorded;
    expect([lookupsAsActivities(before), localActivityMarkers(before)]).toEqual([1, 0]);
    expect([lookupsAsActivities(after), localActivityMarkers(after)]).toEqual([0, 1]);
    const workflowBundle = await bundleWorkflows();
    await expect(Worker.runReplayHistory({ workflowBundle }, before, 'before-patch')).resolves.toBeUndefined();
    await expect(Worker.runReplayHistory({ workflowBundle }, after, 'after-patch')).resolves.toBeUndefined();
  });

  it('replays conversations from both sides of the serial-sends patch: turns started together before it, one by one after', async () => {
    quietRuntime();
    type Recorded = {
      events: Array<{
        eventType: string;
        startChildWorkflowExecutionInitiatedEventAttributes?: { workflowId: string };
        markerRecordedEventAttributes?: { markerName: string };
      }>;
    };
    // The turn events in order: 'start' when a child turn is started, 'end' when one completes.
    const turnEvent = (event: Recorded['events'][number]) => {
      if (event.startChildWorkflowExecutionInitiatedEventAttributes) return ['start'];
      return event.eventType.endsWith('CHILD_WORKFLOW_EXECUTION_COMPLETED') ? ['end'] : [];
    };
    const turnEvents = (recorded: Recorded) => recorded.events.flatMap(turnEvent);
    const isPatchMarker = (event: Recorded['events'][number]) => event.markerRecordedEventAttributes?.markerName === 'core_patch';
    const patchMarkers = (recorded: Recorded) => recorded.events.filter(isPatchMarker);
    // Child ids derive from the conversation's workflow id, so each history replays under its own id.
    const workflowId = (recorded: Recorded) => {
      const firstTurn = recorded.events.find((event) => event.startChildWorkflowExecutionInitiatedEventAttributes);
      return firstTurn!.startChildWorkflowExecutionInitiatedEventAttributes!.workflowId.replace(/-turn-1$/, '');
    };
    const before = JSON.parse(readFileSync(CONCURRENT_SENDS_BEFORE_PATCH_HISTORY, 'utf8')) as Recorded;
    const after = JSON.parse(readFileSync(CONCURRENT_SENDS_SERIAL_HISTORY, 'utf8')) as Recorded;
    expect([turnEvents(before), patchMarkers(before)]).toEqual([['start', 'start', 'start', 'end', 'end', 'end'], []]);
    expect([turnEvents(after), patchMarkers(after).length]).toEqual([['start', 'end', 'start', 'end', 'start', 'end'], 1]);
    const workflowBundle = await bundleWorkflows();
    for (const recorded of [before, after]) {
      await expect(Worker.runReplayHistory({ workflowBundle }, recorded, workflowId(recorded))).resolves.toBeUndefined();
    }
  });

  it('replays retried reversible writes from both sides of the lookup-after-backoff patch: lookup then backoff before it, backoff then lookup after', async () => {
    quietRuntime();
    type Recorded = {
      events: Array<{
        eventType: string;
        activityTaskScheduledEventAttributes?: { activityType: { name: string } };
        markerRecordedEventAttributes?: { markerName: string };
      }>;
    };
    // What the workflow did after the first runTool failed: status lookups (local activity markers), timers, runTool, patch markers.
    const afterFirstFailure = (recorded: Recorded) => {
      const failed = recorded.events.findIndex((event) => event.eventType.endsWith('ACTIVITY_TASK_FAILED'));
      return recorded.events
        .slice(failed + 1)
        .flatMap((event) => {
          const marker = event.markerRecordedEventAttributes?.markerName;
          if (marker) return [marker === 'core_patch' ? 'patch' : 'lookup'];
          if (event.eventType.endsWith('TIMER_STARTED')) return ['backoff'];
          return event.activityTaskScheduledEventAttributes?.activityType.name === 'runTool' ? ['runTool'] : [];
        })
        .slice(0, 4);
    };
    const before = JSON.parse(readFileSync(REVERSIBLE_RETRY_BEFORE_PATCH_HISTORY, 'utf8')) as Recorded;
    const after = JSON.parse(readFileSync(REVERSIBLE_RETRY_HISTORY, 'utf8')) as Recorded;
    expect(afterFirstFailure(before)).toEqual(['lookup', 'backoff', 'runTool']);
    expect(afterFirstFailure(after)).toEqual(['patch', 'backoff', 'lookup', 'runTool']);
    const workflowBundle = await bundleWorkflows();
    await expect(Worker.runReplayHistory({ workflowBundle }, before, 'before-patch')).resolves.toBeUndefined();
    await expect(Worker.runReplayHistory({ workflowBundle }, after, 'after-patch')).resolves.toBeUndefined();
  });

  it('catches a deliberately non-deterministic change of the workflow', async () => {
    quietRuntime();
    const changed = await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, 'fixtures', 'changed-workflows.ts'),
      logger: new DefaultLogger('WARN'),
    });
    await expect(Worker.runReplayHistory({ workflowBundle: changed }, history, 'recorded-turn')).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
  });
});

describe('replay of a resolution wait whose status lookup ended a workflow task', () => {
  type Recorded = {
    events: Array<{
      eventType: string;
      markerRecordedEventAttributes?: { markerName: string; details?: Record<string, { payloads: Array<{ data: string }> }> };
    }>;
  };
  const read = (file: string) => JSON.parse(readFileSync(path.join(HISTORY_FOLDER, file), 'utf8')) as Recorded;
  const patchesAfterLookup = (recorded: Recorded) => {
    const types = recorded.events.map((event) => event.eventType.replace(/^EVENT_TYPE_/, ''));
    const lookup = recorded.events.findIndex((event) => {
      const result = event.markerRecordedEventAttributes?.details?.result?.payloads[0]?.data;
      return result !== undefined && Buffer.from(result, 'base64').toString('utf8').includes('"unknown"');
    });
    return { lookup, types };
  };

  it('replays the turn when the lookup marker ends one workflow task and the wait begins in the next: the patches were asked before the lookup', async () => {
    quietRuntime();
    // Recorded from a Web UI resolution turn and given the shape a loaded worker records now and then:
    // the lookup's marker closes its workflow task, the rest follows in a new one.
    const { lookup, types } = patchesAfterLookup(read('resolution-lookup-ended-workflow-task.json'));
    expect(lookup).toBeGreaterThan(0);
    expect(types.slice(lookup + 1, lookup + 4)).toEqual(['WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED', 'WORKFLOW_TASK_COMPLETED']);
    // The patches stand before the lookup, after the failed write.
    const patchesBefore = types.slice(0, lookup).filter((type) => type === 'MARKER_RECORDED').length;
    expect(patchesBefore).toBeGreaterThanOrEqual(5);
    const workflowBundle = await bundleWorkflows();
    const recorded = read('resolution-lookup-ended-workflow-task.json');
    await expect(Worker.runReplayHistory({ workflowBundle }, recorded, 'lookup-ended-task')).resolves.toBeUndefined();
  });

  it('replays a resolution recorded when the patches were asked right after the lookup', async () => {
    quietRuntime();
    const recorded = read('resolution-patches-after-lookup.json');
    const { lookup, types } = patchesAfterLookup(recorded);
    expect(types[lookup + 1]).toBe('MARKER_RECORDED');
    const workflowBundle = await bundleWorkflows();
    await expect(Worker.runReplayHistory({ workflowBundle }, recorded, 'patches-after-lookup')).resolves.toBeUndefined();
  });
});
