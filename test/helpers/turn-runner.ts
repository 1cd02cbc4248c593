import { openConfiguredStore } from '../../intents/open-store';
import { randomUUID } from 'node:crypto';
import { Client, type Connection, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll } from 'vitest';
import { createActivities } from '../../activities';
import type { ToolDefinition } from '../../tools/define-tool';
import type { IdempotencyStore } from '../../intents/intent-store';
import type { ModelEnvironment } from '../../activities/models/language-model';
import type { AgentTurnInput, AgentTurnResult, ScriptStep } from '../../common/contract/turn';
import type { ModelStepInput, ModelStepResult } from '../../common/activity-types';
import type { TurnMessage } from '../../common/contract/conversation';
import { currentWorkflowId, resolveKeptResults, stepMessages } from '../../activities/kept-results';
import type { TollgateConfig } from '../../config/config-schema';
import { createWorker } from '../../worker/create-worker';
import { stateQuery } from '../../workflows/messages';
import { bundleWorkflows, startTimeSkippingServer } from './servers';
import { testConfig } from './test-config';

export { waitForState } from '../../testing/environment';

/** A scripted model that plays exactly these steps. */
export function scripted(script: ScriptStep[]): AgentTurnInput['model'] {
  return { provider: 'scripted', script };
}

/** What one test turn needs: its environment and bundle, and optionally tools, a store, a config and an interaction. */
export interface TurnOptions {
  env: TestWorkflowEnvironment;
  workflowBundle: WorkflowBundleWithSourceMap;
  input: Omit<AgentTurnInput, 'taskId'> & { taskId?: string };
  tools?: ToolDefinition[];
  /** The tools the model step's worker declares, when they differ from those of the worker that runs them (a fleet mixing versions). */
  modelStepTools?: ToolDefinition[];
  store?: IdempotencyStore;
  config?: TollgateConfig;
  /** API keys and the fetch the model providers use. */
  modelEnvironment?: ModelEnvironment;
  /** Runs after the start and before the result is awaited (approvals are given here). */
  interact?: (handle: WorkflowHandle) => Promise<void>;
  /** Fetches the history through this connection instead of the environment's (one that takes messages past gRPC's 4 MB default). */
  historyConnection?: Connection;
}

/** A copy of a JSON value (what a step takes and gives): by JSON, which nests without limit where structuredClone overflows its stack. */
function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * Runs one turn on a fresh worker and task queue; returns its result, final state, the model's inputs
 * and outputs (of the steps that returned) and the count of scheduled runTool activities.
 */
export async function runTurn(options: TurnOptions) {
  const { env, workflowBundle, input, tools, modelStepTools, store, config: given, modelEnvironment, interact } = options;
  const { historyConnection } = options;
  const taskQueue = `test-${randomUUID()}`;
  const base = given ?? testConfig({ retry: { initialInterval: '100ms', maximumInterval: '1s' } });
  const config: TollgateConfig = { ...base, temporal: { ...base.temporal, taskQueue } };
  const ownStore = store ? undefined : openConfiguredStore(config);
  const activities = createActivities({ config, tools, store: store ?? ownStore!, modelEnvironment });
  const modelStep = modelStepTools
    ? createActivities({ config, tools: modelStepTools, store: store ?? ownStore!, modelEnvironment }).modelStep
    : activities.modelStep;
  /** What each model step was sent, with kept results read back (what the model saw); `sentInputs` as recorded. */
  const modelInputs: Array<Omit<ModelStepInput, 'messages'> & { messages: TurnMessage[] }> = [];
  const sentInputs: ModelStepInput[] = [];
  const modelOutputs: ModelStepResult[] = [];
  const observed = {
    ...activities,
    modelStep: async (stepInput: ModelStepInput) => {
      sentInputs.push(jsonCopy(stepInput));
      // Recorded as the model saw them; a reference the store cannot answer is left to the step itself to fail on.
      const source = { store: store ?? ownStore!, storeName: 'the test store', workflowId: currentWorkflowId() ?? '' };
      const messages = await stepMessages(stepInput, source)
        .then((sent) => resolveKeptResults(sent, source))
        .catch(() => stepInput.messages as TurnMessage[]);
      modelInputs.push(jsonCopy({ ...stepInput, earlier: undefined, messages }));
      const output = await modelStep(stepInput);
      modelOutputs.push(jsonCopy(output));
      return output;
    },
  };
  const worker = await createWorker({ config, connection: env.nativeConnection, activities: observed, workflowBundle });
  try {
    return await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue,
        args: [{ taskId: 'task-1', ...input }],
      });
      await interact?.(handle);
      const result = (await handle.result()) as AgentTurnResult;
      const historyClient = historyConnection ? new Client({ connection: historyConnection, namespace: env.namespace }) : undefined;
      const history = await (historyClient?.workflow.getHandle(handle.workflowId) ?? handle).fetchHistory();
      const state = await handle.query(stateQuery);
      const runToolScheduled = (history.events ?? []).filter(
        (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool',
      ).length;
      return { result, modelInputs, sentInputs, modelOutputs, runToolScheduled, state, config, handle, history };
    });
  } finally {
    await ownStore?.close();
  }
}

/** A time-skipping server and a workflow bundle, filled in before the calling file's tests run. */
export interface TimeSkippingEnvironment {
  env: TestWorkflowEnvironment;
  workflowBundle: WorkflowBundleWithSourceMap;
}

/** Starts one time-skipping server and one workflow bundle for the calling test file, and stops the server after it. */
export function useTimeSkippingEnvironment(): TimeSkippingEnvironment {
  const holder = {} as TimeSkippingEnvironment;
  beforeAll(async () => {
    [holder.env, holder.workflowBundle] = await Promise.all([startTimeSkippingServer(), bundleWorkflows()]);
  });
  afterAll(async () => {
    await holder.env?.teardown();
  });
  return holder;
}

/** The calling file's `runTurn`, on its own time-skipping environment or on the one given. */
export function useTurnRunner(
  environment: TimeSkippingEnvironment = useTimeSkippingEnvironment(),
): (options: Omit<TurnOptions, 'env' | 'workflowBundle'>) => ReturnType<typeof runTurn> {
  return (options) => runTurn({ env: environment.env, workflowBundle: environment.workflowBundle, ...options });
}
