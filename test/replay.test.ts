import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { CONCURRENT_SENDS_SERIAL_HISTORY, HISTORY_FOLDER, RECORDED_HISTORY, REVERSIBLE_RETRY_HISTORY } from './helpers/histories';
import { bundleWorkflows, quietRuntime } from './helpers/servers';

type Recorded = {
  events: Array<{
    eventType: string;
    activityTaskScheduledEventAttributes?: { activityType: { name: string } };
    markerRecordedEventAttributes?: { markerName: string };
    startChildWorkflowExecutionInitiatedEventAttributes?: { workflowId: string };
  }>;
};

const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Recorded;

/** Every recorded history, the conversations' folder included. */
function recordedFiles(): string[] {
  return readdirSync(HISTORY_FOLDER, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.json'))
    .map((name) => path.join(HISTORY_FOLDER, name))
    .sort();
}

/** The workflow id a history replays under: a conversation's child turns derive their ids from it. */
function replayId(recorded: Recorded, file: string): string {
  const child = recorded.events.find((event) => event.startChildWorkflowExecutionInitiatedEventAttributes);
  return child ? child.startChildWorkflowExecutionInitiatedEventAttributes!.workflowId.replace(/-turn-\d+$/, '') : path.basename(file);
}

describe('replay of recorded turns', () => {
  it('replays every recorded turn and conversation on the current workflow code', async () => {
    quietRuntime();
    const files = recordedFiles();
    expect(files.map((file) => path.relative(HISTORY_FOLDER, file))).toEqual(
      expect.arrayContaining(['agent-turn-built-in-plan.json', path.join('conversation', 'concurrent-sends-serial.json')]),
    );
    const workflowBundle = await bundleWorkflows();
    for (const file of files) {
      const recorded = read(file);
      await expect(Worker.runReplayHistory({ workflowBundle }, recorded, replayId(recorded, file)), file).resolves.toBeUndefined();
    }
  });

  it('finds no patch marker in any recorded history: workflow changes ship as new worker builds', () => {
    for (const file of recordedFiles()) {
      const markers = read(file).events.flatMap((event) => event.markerRecordedEventAttributes?.markerName ?? []);
      expect(
        markers.filter((name) => name === 'core_patch'),
        file,
      ).toEqual([]);
    }
  });

  it('holds a conversation whose three sends made at once ran their turns one after another', () => {
    const turnEvents = read(CONCURRENT_SENDS_SERIAL_HISTORY).events.flatMap((event) => {
      if (event.startChildWorkflowExecutionInitiatedEventAttributes) return ['start'];
      return event.eventType.endsWith('CHILD_WORKFLOW_EXECUTION_COMPLETED') ? ['end'] : [];
    });
    expect(turnEvents).toEqual(['start', 'end', 'start', 'end', 'start', 'end']);
  });

  it('holds a retried reversible write that backed off before it looked the status up again', () => {
    const events = read(REVERSIBLE_RETRY_HISTORY).events;
    const failed = events.findIndex((event) => event.eventType.endsWith('ACTIVITY_TASK_FAILED'));
    expect(failed).toBeGreaterThan(0);
    // After the first runTool failed: the backoff timer, then the lookup (a local activity marker), then runTool again.
    const after = events.slice(failed + 1).flatMap((event) => {
      if (event.markerRecordedEventAttributes?.markerName === 'core_local_activity') return ['lookup'];
      if (event.eventType.endsWith('TIMER_STARTED')) return ['backoff'];
      return event.activityTaskScheduledEventAttributes?.activityType.name === 'runTool' ? ['runTool'] : [];
    });
    expect(after.slice(0, 3)).toEqual(['backoff', 'lookup', 'runTool']);
  });

  it('catches a deliberately non-deterministic change of the workflow', async () => {
    quietRuntime();
    const changed = await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, 'fixtures', 'changed-workflows.ts'),
      logger: new DefaultLogger('WARN'),
    });
    await expect(Worker.runReplayHistory({ workflowBundle: changed }, read(RECORDED_HISTORY), 'recorded-turn')).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
  });
});
