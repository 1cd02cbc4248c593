import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../activities';
import { openConfiguredStore } from '../intents/open-store';
import { toMilliseconds, type Duration } from '../common/duration';
import type {
  DecisionReceipt,
  PendingApproval,
  PendingResolution,
  PendingResume,
  ResolutionDecision,
  ResolutionReceipt,
  ResumeReceipt,
} from '../common/contract/decisions';
import type { AgentTurnResult, TurnLimits, TurnState } from '../common/contract/turn';
import type { TollgateConfig } from '../config/config-schema';
import type { ToolDefinition } from '../tools/define-tool';
import type { AgentDefinition } from '../agents/define-agent';
import { createWorker } from '../worker/create-worker';
import { decideUpdate, resolveUpdate, resumeUpdate, stateQuery } from '../workflows/messages';
import { testConfig } from './config';
import { FAKE_PROVIDER_QUEUE_HEADER, startFakeProvider, type FakeProvider } from './fake-provider';
import { checkScript, replyFor, type ScriptStep } from './script';
import { expectScriptFollowed, scriptReport, type ScriptReport } from './script-check';
import { roundOf } from './round-of';
import { bundleWorkflows, startDevServerEnvironment, startTimeSkippingServer } from './servers';

/** The name of the model entry the kit adds to the config: the fake provider, answering each turn from its script. */
export const KIT_MODEL = 'kit';

/** What {@link createTestEnvironment} runs: your tools, your config, and which server. */
export interface TestEnvironmentOptions {
  /** The tools the worker serves; their real handler executions are counted ({@link TestEnvironment.executions}). */
  tools: ToolDefinition[];
  /** Agents (`defineAgent`) the worker serves; a turn names one with `agent`. */
  // The element type is widened: an agent's typed output plays no part in serving it.
  agents?: Array<AgentDefinition<any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Config keys as in temporal.config.yaml (`retry`, `approvals`, `tools`, `limits`…), over the defaults. */
  config?: Record<string, unknown>;
  /** `time-skipping` (default): timers such as a 24-hour approval expiry pass in milliseconds. `dev-server`: Temporal's dev server, real time. */
  mode?: 'time-skipping' | 'dev-server';
}

/** Options of one test turn. */
export interface TurnOptions {
  /** The business task (idempotency keys derive from it); a fresh one per turn by default. */
  taskId?: string;
  /** The tools this turn may call (default: all). */
  tools?: string[];
  /** The agent that runs the turn (one of the environment's `agents`); the default agent when left out. */
  agent?: string;
  limits?: TurnLimits;
  /** `false` returns the result even when the turn did not follow its script (default: such a turn fails the test). */
  followScript?: boolean;
}

/** A turn started by the kit. */
export interface TestTurn {
  workflowId: string;
  handle: WorkflowHandle;
  /** The script the kit's model plays for this turn. */
  steps: ScriptStep[];
  /**
   * The turn's result once it ended (in time-skipping mode, timers are skipped while this waits);
   * throws a ScriptNotFollowedError with a step-by-step table when the turn did not follow its script,
   * unless the turn was started with `followScript: false`.
   */
  result(): Promise<AgentTurnResult>;
  /** The step-by-step comparison of the script with what the turn did, once it ended. */
  report(): Promise<ScriptReport>;
}

/** Options of a decision the kit sends. */
export interface KitDecisionOptions {
  approver?: string;
  reason?: string;
}

/** Options of a resolution of an unknown outcome. */
export interface KitResolveOptions {
  /** Default: the digest of the arguments as the waiting call shows them (`pendingResolutions`). */
  argsDigest?: string;
  resolver?: string;
  note?: string;
}

/** A running test environment: a server, a worker with your tools on its own task queue, the scripted model, and helpers. */
export interface TestEnvironment {
  /** The Temporal test environment (its `client`, `connection`, `nativeConnection`). */
  readonly env: TestWorkflowEnvironment;
  /** The worker's config (with its own task queue and the kit's model). */
  readonly config: TollgateConfig;
  /** Runs one turn with this script to its end and returns its result; fails when the turn did not follow the script. */
  run(prompt: string, steps: ScriptStep[], options?: TurnOptions): Promise<AgentTurnResult>;
  /** Starts one turn with this script and returns at once. */
  startTurn(prompt: string, steps: ScriptStep[], options?: TurnOptions): Promise<TestTurn>;
  /** Waits until `callId` (default: any call) waits for approval, and returns it. */
  pendingApproval(turn: TestTurn, callId?: string): Promise<PendingApproval>;
  /** Approves `callId` (default: the one call waiting) once it waits, naming the digest of its arguments. */
  approve(turn: TestTurn, callId?: string, options?: KitDecisionOptions): Promise<DecisionReceipt>;
  /** Denies `callId` (default: the one call waiting) once it waits. */
  deny(turn: TestTurn, callId?: string, options?: KitDecisionOptions): Promise<DecisionReceipt>;
  /**
   * Resolves a write whose outcome is unknown (`callId` default: the one such call) with the
   * `resolve` update: `applied` or `not_applied`, as a person who checked the remote system says.
   */
  resolve(
    turn: TestTurn,
    outcome: 'applied' | 'not_applied',
    options?: KitResolveOptions & { callId?: string },
  ): Promise<ResolutionReceipt>;
  /** Waits until `callId` (default: any call) waits for a resolution (its outcome unknown), and returns it. */
  pendingResolution(turn: TestTurn, callId?: string): Promise<PendingResolution>;
  /** Waits until a model step whose stream was cut after chunks went out waits for a `resume` decision, and returns it. */
  pendingResume(turn: TestTurn): Promise<PendingResume>;
  /** Decides on a model stream cut after chunks went out (`step` default: the one waiting) with the `resume` update. */
  resume(turn: TestTurn, decision: 'retry' | 'stop', options?: { step?: number }): Promise<ResumeReceipt>;
  /** Moves the server's clock forward by `duration` (time-skipping mode only). */
  skip(duration: Duration): Promise<void>;
  /** The turn's `state` query. */
  state(turn: TestTurn): Promise<TurnState>;
  /** How many times the handler of `toolName` really ran, across this environment's turns. */
  executions(toolName: string): number;
  /** Stops the worker, the fake provider and the server; safe to call twice, and when the start failed halfway. */
  teardown(): Promise<void>;
}

let sharedBundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** The workflows bundled once per process; a failed bundle is not kept. */
function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  sharedBundle ??= bundleWorkflows().catch((error) => {
    sharedBundle = undefined;
    throw error;
  });
  return sharedBundle;
}

function countedTools(tools: ToolDefinition[], counts: Map<string, number>): ToolDefinition[] {
  if (!Array.isArray(tools) || tools.length === 0) throw new Error('createTestEnvironment: tools must list at least one tool (defineTool)');
  return tools.map((tool) => {
    if (counts.has(tool.name)) throw new Error(`createTestEnvironment: tool ${tool.name} is given twice`);
    counts.set(tool.name, 0);
    return {
      ...tool,
      handler: (args, context) => {
        counts.set(tool.name, counts.get(tool.name)! + 1);
        return tool.handler(args, context);
      },
    };
  });
}

/** A fetch that tells the fake provider which turn asks: the workflow id of the model step running it. */
function turnRoutedFetch(): typeof globalThis.fetch {
  return (input, init) => {
    let workflowId: string | undefined;
    try {
      workflowId = Context.current().info.workflowExecution?.workflowId;
    } catch {
      // Not inside an activity: the default queue answers.
    }
    const headers = new Headers(init?.headers);
    if (workflowId) headers.set(FAKE_PROVIDER_QUEUE_HEADER, workflowId);
    return globalThis.fetch(input, { ...init, headers });
  };
}

function kitConfig(data: Record<string, unknown> | undefined, provider: FakeProvider): TollgateConfig {
  if (data !== undefined && (typeof data !== 'object' || data === null || Array.isArray(data))) {
    throw new Error('createTestEnvironment: config must be an object of config keys, as in temporal.config.yaml');
  }
  const given = data ?? {};
  const model = (given.model ?? {}) as { models?: Record<string, unknown> };
  const base = testConfig(
    {
      retry: { initialInterval: '100ms', maximumInterval: '1s' },
      ...given,
      model: {
        ...model,
        default: KIT_MODEL,
        models: { ...model.models, [KIT_MODEL]: { provider: 'openai-compatible', model: 'scripted', baseURL: provider.baseURL } },
      },
    },
    { source: 'createTestEnvironment({ config })' },
  );
  return { ...base, temporal: { ...base.temporal, taskQueue: `tollgate-test-${randomUUID()}` } };
}

/** Polls (in real time, without moving the server's clock) until `ready` holds for the turn's state. */
export async function waitForState(handle: WorkflowHandle, ready: (state: TurnState) => boolean, timeoutMs = 20_000): Promise<TurnState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await handle.query(stateQuery);
    if (ready(state)) return state;
    if (state.status !== 'running') throw new Error(`turn ${handle.workflowId} ended (${state.status}) before the awaited state`);
    if (Date.now() > deadline) throw new Error(`the state of turn ${handle.workflowId} never became ready: ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Starts a test environment: the server from the binaries `tollgate setup` installed (never a
 * download), a worker with `tools` on its own task queue, and the kit's model, which plays each
 * turn's script over HTTP (faults included). Call `teardown()` in `afterAll`; the server is also
 * stopped if the process exits without it.
 */
export async function createTestEnvironment(options: TestEnvironmentOptions): Promise<TestEnvironment> {
  const mode = options.mode ?? 'time-skipping';
  if (mode !== 'time-skipping' && mode !== 'dev-server') {
    throw new Error(`createTestEnvironment: mode must be 'time-skipping' or 'dev-server', got ${JSON.stringify(mode)}`);
  }
  const counts = new Map<string, number>();
  const tools = countedTools(options.tools, counts);
  const stops: Array<() => Promise<void>> = [];
  let tornDown: Promise<void> | undefined;
  const teardown = () =>
    (tornDown ??= (async () => {
      for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
    })());
  try {
    const provider = await startFakeProvider();
    stops.push(() => provider.close());
    const config = kitConfig(options.config, provider);
    const [env, bundle] = await Promise.all([
      mode === 'time-skipping' ? startTimeSkippingServer() : startDevServerEnvironment(),
      workflowBundle(),
    ]);
    stops.push(() => env.teardown());
    const store = openConfiguredStore(config);
    stops.push(() => store.close());
    const activities = createActivities({ config, tools, store, modelEnvironment: { fetch: turnRoutedFetch() }, agents: options.agents });
    const worker = await createWorker({ config, connection: env.nativeConnection, activities, workflowBundle: bundle });
    const running = worker.run();
    stops.push(async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    });
    return kitEnvironment({ env, config, provider, counts, mode, teardown });
  } catch (error) {
    await teardown();
    throw error;
  }
}

function kitEnvironment({
  env,
  config,
  provider,
  counts,
  mode,
  teardown,
}: {
  env: TestWorkflowEnvironment;
  config: TollgateConfig;
  provider: FakeProvider;
  counts: Map<string, number>;
  mode: 'time-skipping' | 'dev-server';
  teardown: () => Promise<void>;
}): TestEnvironment {
  const startTurn = async (prompt: string, given: ScriptStep[], turnOptions: TurnOptions = {}): Promise<TestTurn> => {
    const steps = checkScript(given, 'startTurn');
    const workflowId = `test-turn-${randomUUID()}`;
    provider.enqueueFor(workflowId, ...steps.map(replyFor));
    const handle = await env.client.workflow.start('agentTurn', {
      workflowId,
      taskQueue: config.temporal.taskQueue,
      args: [
        {
          taskId: turnOptions.taskId ?? `task-${randomUUID()}`,
          prompt,
          model: KIT_MODEL,
          ...(turnOptions.tools ? { tools: turnOptions.tools } : {}),
          ...(turnOptions.agent ? { agent: turnOptions.agent } : {}),
          ...(turnOptions.limits ? { limits: turnOptions.limits } : {}),
        },
      ],
    });
    let ended: Promise<AgentTurnResult> | undefined;
    const outcome = () => (ended ??= handle.result() as Promise<AgentTurnResult>);
    const report = async () => {
      const result = await outcome();
      const requests = provider.requests.filter((request) => request.queue === workflowId).length;
      return scriptReport({ workflowId, steps, requests, result });
    };
    return {
      workflowId,
      handle,
      steps,
      report,
      result: async () => {
        const result = await outcome();
        if (turnOptions.followScript !== false) expectScriptFollowed(await report());
        return result;
      },
    };
  };

  const pendingApproval = async (turn: TestTurn, callId?: string) => {
    const state = await waitForState(turn.handle, (current) =>
      current.pendingApprovals.some((pending) => callId === undefined || pending.callId === callId),
    );
    const waiting = state.pendingApprovals.filter((pending) => callId === undefined || pending.callId === callId);
    if (waiting.length > 1) {
      throw new Error(
        `${waiting.length} calls wait for approval (${waiting.map((pending) => pending.callId).join(', ')}); name the callId`,
      );
    }
    return waiting[0];
  };

  const decide = async (turn: TestTurn, decision: 'approve' | 'deny', callId?: string, options: KitDecisionOptions = {}) => {
    const pending = await pendingApproval(turn, callId);
    return turn.handle.executeUpdate(decideUpdate, {
      args: [
        {
          callId: pending.callId,
          decision,
          argsDigest: pending.argsDigest,
          approver: options.approver ?? 'test',
          reason: options.reason,
          ...roundOf(pending),
        },
      ],
    });
  };

  const pendingResolution = async (turn: TestTurn, callId?: string) => {
    const matches = (pending: PendingResolution) => callId === undefined || pending.callId === callId;
    const state = await waitForState(turn.handle, (current) => (current.pendingResolutions ?? []).some(matches));
    const waiting = (state.pendingResolutions ?? []).filter(matches);
    if (waiting.length > 1) {
      throw new Error(
        `${waiting.length} calls wait for a resolution (${waiting.map((pending) => pending.callId).join(', ')}); name the callId`,
      );
    }
    return waiting[0];
  };

  return {
    env,
    config,
    run: async (prompt, steps, turnOptions) => (await startTurn(prompt, steps, turnOptions)).result(),
    startTurn,
    pendingApproval,
    approve: (turn, callId, options) => decide(turn, 'approve', callId, options),
    deny: (turn, callId, options) => decide(turn, 'deny', callId, options),
    pendingResolution,
    resolve: async (turn, outcome, options = {}) => {
      if (outcome !== 'applied' && outcome !== 'not_applied') {
        throw new Error(`resolve: outcome must be 'applied' or 'not_applied', got ${JSON.stringify(outcome)}`);
      }
      const pending = await pendingResolution(turn, options.callId);
      const resolution: ResolutionDecision = {
        callId: pending.callId,
        outcome,
        argsDigest: options.argsDigest ?? pending.shownDigest ?? pending.argsDigest,
        resolver: options.resolver ?? 'test',
        ...(options.note ? { note: options.note } : {}),
        ...roundOf(pending),
      };
      return turn.handle.executeUpdate(resolveUpdate, { args: [resolution] });
    },
    pendingResume: async (turn) => (await waitForState(turn.handle, (current) => current.pendingResume !== undefined)).pendingResume!,
    resume: async (turn, decision, options = {}) => {
      if (decision !== 'retry' && decision !== 'stop')
        throw new Error(`resume: decision must be 'retry' or 'stop', got ${JSON.stringify(decision)}`);
      const pending = (await waitForState(turn.handle, (current) => current.pendingResume !== undefined)).pendingResume!;
      const step = options.step ?? pending.step;
      const round = pending.step === step && pending.round > 1 ? { round: pending.round } : {};
      return turn.handle.executeUpdate(resumeUpdate, { args: [{ step, decision, by: 'test', ...round }] });
    },
    skip: async (duration) => {
      if (mode !== 'time-skipping') throw new Error("skip: the server's clock can only be moved in mode 'time-skipping'");
      await env.sleep(toMilliseconds(duration));
    },
    state: (turn) => turn.handle.query(stateQuery),
    executions: (toolName) => {
      const count = counts.get(toolName);
      if (count === undefined) throw new Error(`executions: no tool ${toolName} in this environment (${[...counts.keys()].join(', ')})`);
      return count;
    },
    teardown,
  };
}
