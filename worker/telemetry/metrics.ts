import type { InjectedSinks } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ModelStepObservation } from '../../activities/activity-telemetry';
import { TELEMETRY_SINK, type ApprovalWait, type FinishedToolCall, type TelemetrySinks } from '../../common/telemetry';
import { ERROR_CODES, TOOL_EFFECTS, type ToolCallStatus, type TurnStatus } from '../../common/codes';
import { isWriteEffect } from '../../common/effects';
import { handoffToolName } from '../../common/handoff-names';

/** The label value of anything the worker does not declare: a tool name, an effect, a code or a status from elsewhere. */
export const UNKNOWN_LABEL = 'unknown';

/** The agent label of a turn that names no agent. */
const DEFAULT_AGENT = 'default';

const CALL_STATUSES: readonly string[] = Object.keys({ success: true, error: true, denied: true } satisfies Record<ToolCallStatus, true>);
const TURN_STATUSES: readonly string[] = Object.keys({
  completed: true,
  step_limit: true,
  tool_call_limit: true,
  error_budget_exhausted: true,
  deadline_exceeded: true,
  model_failed: true,
  history_limit: true,
  token_budget_exhausted: true,
  output_invalid: true,
} satisfies Record<TurnStatus, true>);

// The buckets the OpenTelemetry GenAI semantic conventions advise for these two histograms.
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOOL_DURATION_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400];
const APPROVAL_WAIT_BUCKETS = [1, 10, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200];

/**
 * Tollgate's metrics of one worker, in its own prom-client registry. Finished calls, turns and
 * approval waits are counted from the workflows through the telemetry sink, which the worker calls
 * after an activation and never while a history is replayed; model steps are observed by the
 * activity, once per attempt (each attempt is a request the provider answered and billed).
 */
export class TollgateMetrics {
  /** The registry `/metrics` serves. */
  readonly registry = new Registry();
  private readonly toolCalls = this.counter('tollgate_tool_calls_total', 'Finished tool calls.', [
    'tool',
    'effect',
    'status',
    'code',
    'agent',
  ]);
  private readonly toolDuration = new Histogram({
    name: 'tollgate_tool_call_duration_seconds',
    help: 'How long a tool call took from the boundary to its final result (approval waits included).',
    labelNames: ['tool', 'effect'],
    buckets: TOOL_DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly approvalWait = new Histogram({
    name: 'tollgate_approval_wait_seconds',
    help: 'How long an irreversible call waited for its decision (or its expiry).',
    labelNames: ['tool'],
    buckets: APPROVAL_WAIT_BUCKETS,
    registers: [this.registry],
  });
  private readonly approvals = this.counter(
    'tollgate_approval_decisions_total',
    'Decisions on irreversible calls: approve or deny, by a person, a rule or a grant.',
    ['tool', 'decision', 'by'],
  );
  private readonly outcomeUnknown = this.counter('tollgate_outcome_unknown_total', 'Writes that ended with outcome_unknown.', ['tool']);
  private readonly turns = this.counter('tollgate_turns_total', 'Finished turns by status and the agent that ended them.', [
    'status',
    'agent',
  ]);
  private readonly tokens = new Histogram({
    name: 'gen_ai_client_token_usage',
    help: 'Tokens per model request (gen_ai.client.token.usage), by token type.',
    labelNames: ['model', 'type'],
    buckets: TOKEN_BUCKETS,
    registers: [this.registry],
  });
  private readonly operationDuration = new Histogram({
    name: 'gen_ai_client_operation_duration_seconds',
    help: 'Duration of one model request (gen_ai.client.operation.duration).',
    labelNames: ['model'],
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly firstChunk = new Histogram({
    name: 'tollgate_model_time_to_first_chunk_seconds',
    help: 'Time from a model request to its first streamed chunk.',
    labelNames: ['model'],
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  /** Approvals waiting on this worker, by workflow, run and call. */
  private readonly waiting = new Map<string, ApprovalWait>();
  /**
   * The tool names this worker's registry declares ({@link knowTools}): the only tool names a label
   * takes. Before the registry is known, no tool name is a label at all.
   */
  private readonly knownTools = new Set<string>();
  /** The agent names this worker declares ({@link knowAgents}) and `default`: the only agent names a label takes. */
  private readonly knownAgents = new Set<string>([DEFAULT_AGENT]);

  constructor(private readonly now: () => number = Date.now) {
    const waiting = () => this.waitingByTool();
    new Gauge({
      name: 'tollgate_approvals_waiting',
      help: 'Irreversible calls waiting for a decision, as this worker saw them open.',
      labelNames: ['tool'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [tool, { count }] of waiting()) this.set({ tool }, count);
      },
    });
    new Gauge({
      name: 'tollgate_approval_oldest_wait_seconds',
      help: 'How long the oldest waiting irreversible call of each tool has waited.',
      labelNames: ['tool'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [tool, { oldestSeconds }] of waiting()) this.set({ tool }, oldestSeconds);
      },
    });
  }

  /**
   * Starts the unknown-outcome counter of each write at 0, so the first unknown outcome is an
   * increase Prometheus sees (a series that appears at 1 has no increase to show).
   */
  knowTools(tools: ReadonlyArray<{ name: string; effect: string }>): void {
    for (const tool of tools) {
      this.knownTools.add(tool.name);
      if (isWriteEffect(tool.effect)) this.outcomeUnknown.inc({ tool: tool.name }, 0);
    }
  }

  /**
   * The agents this worker declares: each name becomes an agent label, and the tools the model is
   * offered for them (`transfer_to_<agent>`, and a delegate call's tool named after the agent) tool labels.
   */
  knowAgents(names: readonly string[]): void {
    for (const name of names) {
      this.knownAgents.add(name);
      this.knownTools.add(name);
      this.knownTools.add(handoffToolName(name));
    }
  }

  /** An agent name as a label: one the worker declares, or `default`, else `unknown`. */
  private agentLabel(name: string | undefined): string {
    if (name === undefined) return DEFAULT_AGENT;
    return this.knownAgents.has(name) ? name : UNKNOWN_LABEL;
  }

  /** A tool name as a label: one the registry declares, else `unknown` (the series stay as many as the declared tools). */
  private toolLabel(name: string): string {
    return this.knownTools.has(name) ? name : UNKNOWN_LABEL;
  }

  /** Counts one finished call: its status and code, its duration, its approval wait, an unknown outcome. */
  toolCallFinished(call: FinishedToolCall): void {
    const tool = this.toolLabel(call.tool);
    const effect = oneOf(call.effect, TOOL_EFFECTS);
    const code = call.code === undefined ? '' : oneOf(call.code, ERROR_CODES);
    this.toolCalls.inc({ tool, effect, status: oneOf(call.status, CALL_STATUSES), code, agent: this.agentLabel(call.agent) });
    this.toolDuration.observe({ tool, effect }, call.durationMs / 1000);
    if (call.approvalWaitMs !== undefined) this.approvalWait.observe({ tool }, call.approvalWaitMs / 1000);
    if (call.code === 'outcome_unknown') this.outcomeUnknown.inc({ tool });
    if (call.approval) {
      const decision = oneOf(call.approval.decision, ['approve', 'deny'] as const);
      this.approvals.inc({ tool, decision, by: oneOf(call.approval.via, ['person', 'rule', 'grant'] as const) });
    }
  }

  /** Counts one finished turn by its status and the agent that ended it. */
  turnFinished(status: string, agent?: string): void {
    this.turns.inc({ status: oneOf(status, TURN_STATUSES), agent: this.agentLabel(agent) });
  }

  /** Observes one attempt of a model step: its tokens, its duration, its time to the first chunk. */
  observeModelStep(observation: ModelStepObservation): void {
    const { model } = observation;
    this.tokens.observe({ model, type: 'input' }, observation.inputTokens);
    this.tokens.observe({ model, type: 'output' }, observation.outputTokens);
    this.operationDuration.observe({ model }, observation.durationSeconds);
    if (observation.firstChunkSeconds !== undefined) this.firstChunk.observe({ model }, observation.firstChunkSeconds);
  }

  /** The sink the workflows report through; none of its functions is called during replay. */
  sinks(): InjectedSinks<TelemetrySinks> {
    const key = (info: WorkflowInfo, callId: string) => `${info.workflowId}/${info.runId}/${callId}`;
    return {
      [TELEMETRY_SINK]: {
        toolCallFinished: { fn: (_info, call) => this.toolCallFinished(call), callDuringReplay: false },
        turnFinished: { fn: (_info, turn) => this.turnFinished(turn.status, turn.agent), callDuringReplay: false },
        approvalOpened: {
          fn: (info, wait) => void this.waiting.set(key(info, wait.callId), this.onOwnClock(wait)),
          callDuringReplay: false,
        },
        approvalClosed: { fn: (info, wait) => void this.waiting.delete(key(info, wait.callId)), callDuringReplay: false },
      },
    };
  }

  /**
   * A wait measured on this worker's clock from the moment the sink saw it open (the activation
   * that opened it, never a replay), so its age does not depend on the server's workflow time.
   */
  private onOwnClock(wait: ApprovalWait): ApprovalWait {
    const now = this.now();
    return { ...wait, requestedAt: now, expiresAt: now + (wait.expiresAt - wait.requestedAt) };
  }

  private waitingByTool(): Map<string, { count: number; oldestSeconds: number }> {
    const now = this.now();
    const byTool = new Map<string, { count: number; oldestSeconds: number }>();
    for (const [key, wait] of this.waiting) {
      // A wait past its expiry was closed on a worker that did not see it open; it waits no more.
      if (wait.expiresAt <= now) {
        this.waiting.delete(key);
        continue;
      }
      const tool = this.toolLabel(wait.tool);
      const entry = byTool.get(tool) ?? { count: 0, oldestSeconds: 0 };
      entry.count++;
      entry.oldestSeconds = Math.max(entry.oldestSeconds, (now - wait.requestedAt) / 1000);
      byTool.set(tool, entry);
    }
    return byTool;
  }

  private counter(name: string, help: string, labelNames: string[]): Counter {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }
}

/** A label value from a closed list, or `unknown` for anything else a workflow reports. */
function oneOf(value: string, allowed: readonly string[]): string {
  return allowed.includes(value) ? value : UNKNOWN_LABEL;
}
