// Workflow-side telemetry of a turn. Spans are made with the tracer Temporal's OpenTelemetry
// workflow interceptors install (a no-op tracer when tracing is off); they reach the exporter
// through the interceptors' sink, and metrics through Tollgate's, and the worker calls neither
// while a history is replayed, so a replayed turn exports and counts nothing again.
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { proxySinks } from '@temporalio/workflow';
import type { BoundaryResult, CheckedToolCall } from '../common/activity-types';
import * as semconv from '../common/gen-ai-semconv';
import { TELEMETRY_SINK, TOLLGATE_ATTRIBUTES, type ApprovalWait, type TelemetrySinks } from '../common/telemetry';
import type { TurnStatus } from '../common/codes';
import type { ToolEvent } from '../common/contract/tools';

const TRACER_NAME = 'tollgate';

/** The `gen_ai.agent.name` of a turn that names no agent, in its `invoke_agent` span's name too. */
const DEFAULT_AGENT_SPAN_NAME = 'tollgate';

/** The agent label of a turn that names no agent, in metrics. */
export const DEFAULT_AGENT_LABEL = 'default';

/** The name telemetry gives a tool the worker's registry does not declare. */
export const UNKNOWN_TOOL = 'unknown';

/**
 * The tool's name as spans and metrics may carry it: the name the registry declares, or
 * `unknown` for a call the check found no tool for (a model may invent any name, of any length,
 * with personal data in it; as a span name or a label it would make a new series every time).
 */
function telemetryToolName(call: CheckedToolCall): string {
  return call.policy ? call.tool : UNKNOWN_TOOL;
}

/** What one turn reports: spans always (when tracing is on), counts when the worker's settings say it counts. */
export class TurnTelemetry {
  /** Whether the worker that started the turn counts calls and turns (its recorded settings). */
  metrics = false;

  /** The agent the turn runs as now (a handoff changes it); left out for the default agent. */
  agent?: string;

  private sink(): TelemetrySinks[typeof TELEMETRY_SINK] | undefined {
    return this.metrics ? proxySinks<TelemetrySinks>()[TELEMETRY_SINK] : undefined;
  }

  /**
   * Runs the turn inside its `invoke_agent <agent>` span (`gen_ai.agent.name` = the agent the turn
   * names, `tollgate` for none; `gen_ai.conversation.id` = the task id). The name is the turn's
   * input's, known before anything runs; an agent the worker does not declare fails the turn inside it.
   */
  async turnSpan<R extends { status: TurnStatus }>(
    { taskId, agent }: { taskId: string; agent?: string },
    run: () => Promise<R>,
  ): Promise<R> {
    const agentName = agent ?? DEFAULT_AGENT_SPAN_NAME;
    const attributes: Attributes = {
      [semconv.ATTR_GEN_AI_OPERATION_NAME]: semconv.GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
      [semconv.ATTR_GEN_AI_CONVERSATION_ID]: taskId,
      [semconv.ATTR_GEN_AI_AGENT_NAME]: agentName,
    };
    const name = `${semconv.GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${agentName}`;
    return trace.getTracer(TRACER_NAME).startActiveSpan(name, { attributes }, async (span) => {
      try {
        const result = await run();
        span.setAttribute(TOLLGATE_ATTRIBUTES.turnStatus, result.status);
        this.sink()?.turnFinished({ status: result.status, agent: this.agent ?? DEFAULT_AGENT_LABEL });
        return result;
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /** Runs one call inside its `execute_tool <tool>` span (`unknown` for a tool no registry declares) and counts it once its event is final. */
  async toolSpan<R extends { outcome: BoundaryResult; event: ToolEvent }>(call: CheckedToolCall, run: () => Promise<R>): Promise<R> {
    const tool = telemetryToolName(call);
    const attributes: Attributes = {
      [semconv.ATTR_GEN_AI_OPERATION_NAME]: semconv.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
      [semconv.ATTR_GEN_AI_TOOL_NAME]: tool,
      [semconv.ATTR_GEN_AI_TOOL_CALL_ID]: call.callId,
      [semconv.ATTR_GEN_AI_TOOL_TYPE]: 'function',
    };
    const name = `${semconv.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${tool}`;
    return trace.getTracer(TRACER_NAME).startActiveSpan(name, { attributes }, async (span) => {
      try {
        const ran = await run();
        const { outcome, event } = ran;
        span.setAttributes(toolAttributes(outcome, event));
        if (event.status === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: event.code });
        this.sink()?.toolCallFinished({
          tool,
          agent: this.agent ?? DEFAULT_AGENT_LABEL,
          effect: event.effect,
          status: event.status,
          ...(event.code ? { code: event.code } : {}),
          durationMs: event.durationMs,
          ...(outcome.approvalWaitMs !== undefined ? { approvalWaitMs: outcome.approvalWaitMs } : {}),
          ...(event.approval ? { approval: { decision: event.approval.decision, via: event.approval.via } } : {}),
        });
        return ran;
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /** An irreversible call started waiting for its decision. */
  approvalOpened(wait: ApprovalWait): void {
    this.sink()?.approvalOpened(wait);
  }

  /** An irreversible call stopped waiting (decided or expired). */
  approvalClosed(callId: string): void {
    this.sink()?.approvalClosed({ callId });
  }
}

function toolAttributes(outcome: BoundaryResult, event: ToolEvent): Attributes {
  const attributes: Attributes = {
    [TOLLGATE_ATTRIBUTES.effect]: event.effect,
    [TOLLGATE_ATTRIBUTES.status]: event.status,
    [TOLLGATE_ATTRIBUTES.executions]: outcome.executions,
    [TOLLGATE_ATTRIBUTES.step]: event.step,
  };
  if (event.code) attributes[TOLLGATE_ATTRIBUTES.code] = event.code;
  if (outcome.approvalWaitMs !== undefined) attributes[TOLLGATE_ATTRIBUTES.approvalWaitMs] = outcome.approvalWaitMs;
  if (outcome.statusLookup) attributes[TOLLGATE_ATTRIBUTES.statusLookup] = outcome.statusLookup;
  if (outcome.idempotency) attributes[TOLLGATE_ATTRIBUTES.idempotency] = outcome.idempotency;
  if (event.status === 'error') attributes[semconv.ATTR_ERROR_TYPE] = event.code ?? 'tool_failure';
  return attributes;
}

function failed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
  span.setAttribute(semconv.ATTR_ERROR_TYPE, (error as Error)?.name ?? 'Error');
}
