import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import {
  CONCURRENT_SENDS_SERIAL_HISTORY,
  HISTORY_FOLDER,
  RECORDED_HISTORY,
  REVERSIBLE_RETRY_HISTORY,
  TRACED_HISTORY_FOLDER,
} from '../helpers/histories';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';
import { startOtlpReceiver } from '../helpers/otlp-receiver';
import { testConfig } from '../helpers/test-config';
import { WORKFLOWS_PATH } from '../../worker/create-worker';
import { buildIdOfBundle } from '../../worker/deployment';
import { TollgateMetrics } from '../../worker/telemetry/metrics';
import { createTracing } from '../../worker/telemetry/tracing';

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
  // A conversation's turn is `<id>-turn-<n>`, a delegate call's child turn `<id>-call-<callId>`.
  const started = child?.startChildWorkflowExecutionInitiatedEventAttributes!.workflowId;
  return started ? started.replace(/-turn-\d+$/, '').replace(/-call-call-\d+-\d+$/, '') : path.basename(file);
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

  it('replays the turns and conversations recorded with tracing on a tracing worker (OpenTelemetry v2 interceptors), exporting no span', async () => {
    quietRuntime();
    // A turn and a conversation recorded by a tracing worker on Temporal's OpenTelemetry 1.x interceptors.
    const files = recordedFiles().filter((file) => file.startsWith(TRACED_HISTORY_FOLDER));
    expect(files.map((file) => path.basename(file))).toEqual(['agent-turn-traced.json', 'conversation-traced.json']);
    const receiver = await startOtlpReceiver();
    const tracing = createTracing(testConfig({ telemetry: { otlp: { endpoint: receiver.url, serviceName: 'tollgate-replay' } } }))!;
    try {
      const results = Worker.runReplayHistories(
        {
          workflowsPath: WORKFLOWS_PATH,
          plugins: [tracing.plugin],
          sinks: new TollgateMetrics().sinks(),
        },
        files.map((file) => {
          const recorded = read(file);
          return { workflowId: replayId(recorded, file), history: recorded };
        }),
      );
      const replayed: Array<{ workflowId: string; error?: string }> = [];
      for await (const result of results)
        replayed.push({ workflowId: result.workflowId, ...(result.error ? { error: String(result.error) } : {}) });
      expect(replayed).toEqual([{ workflowId: 'agent-turn-traced.json' }, { workflowId: 'traced-conversation' }]);
    } finally {
      await tracing.shutdown();
      await receiver.close();
    }
    expect(receiver.spans).toEqual([]);
  });

  it('keeps tracing a build of its own: a turn recorded without tracing, an update in it, does not replay on a tracing bundle', async () => {
    quietRuntime();
    const tracing = createTracing(
      testConfig({ telemetry: { otlp: { endpoint: 'http://127.0.0.1:9/v1/traces', serviceName: 'tollgate-replay' } } }),
    )!;
    try {
      // The v2 interceptors wrap every update handler in a span, whatever the history recorded (the 1.x ones
      // did so only for histories whose SDK flags said so): the update completes one step later than recorded.
      const traced = await bundleWorkflowCode({
        workflowsPath: WORKFLOWS_PATH,
        plugins: [tracing.plugin],
        logger: new DefaultLogger('WARN'),
      });
      await expect(
        Worker.runReplayHistory({ workflowBundle: traced, sinks: new TollgateMetrics().sinks() }, read(RECORDED_HISTORY), 'recorded-turn'),
      ).rejects.toBeInstanceOf(DeterminismViolationError);
      // So a worker that traces is never the build of one that does not: the build id is the bundle's digest.
      expect(buildIdOfBundle(traced.code)).not.toBe(buildIdOfBundle((await bundleWorkflows()).code));
    } finally {
      await tracing.shutdown();
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
      workflowsPath: path.join(__dirname, '..', 'fixtures', 'changed-workflows.ts'),
      logger: new DefaultLogger('WARN'),
    });
    await expect(Worker.runReplayHistory({ workflowBundle: changed }, read(RECORDED_HISTORY), 'recorded-turn')).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
  });
});
