// What the workflows report to the worker's telemetry: the sink they call (never during replay)
// and the names of the span attributes Tollgate adds to the OpenTelemetry GenAI conventions.
import type { Sinks } from '@temporalio/workflow';
import type { ErrorCode, ToolCallStatus, ToolEffect, TurnStatus } from './codes';

/** The name of the sink the workflows report finished calls and turns through. */
export const TELEMETRY_SINK = 'tollgateTelemetry';

/** How a status lookup answered before a reversible write (the last answer of the call). */
export type StatusLookupAnswer = 'applied' | 'not_applied' | 'unknown';

/**
 * What the intent store said about a write: `claimed` (this attempt ran it), `receipt` (answered
 * from an earlier run's receipt), `status_check` (the tool's check found it applied), `in_flight`
 * (another attempt holds it), `unconfirmed` (started before and never confirmed), `store_failed`.
 */
export type IdempotencyOutcome = 'claimed' | 'receipt' | 'status_check' | 'in_flight' | 'unconfirmed' | 'store_failed';

/** One finished tool call, as the metrics count it. */
export interface FinishedToolCall {
  tool: string;
  /** The agent the turn ran as when the call was made (`default` for a turn naming none); left out by workflows recorded before. */
  agent?: string;
  effect: ToolEffect | 'unknown';
  status: ToolCallStatus;
  code?: ErrorCode;
  durationMs: number;
  /** How long an irreversible write waited for its decision; left out for calls that never waited. */
  approvalWaitMs?: number;
  /** Irreversible writes: the decision, and whether a person, a rule or a grant took it. */
  approval?: { decision: 'approve' | 'deny'; via: 'person' | 'rule' | 'grant' };
}

/** An approval that started or stopped waiting; keyed by the turn's workflow and the call. */
export interface ApprovalWait {
  callId: string;
  tool: string;
  /** Workflow time in epoch milliseconds. */
  requestedAt: number;
  /** When the wait ends for good without a decision. */
  expiresAt: number;
}

/** The sink: called by the worker after each workflow activation, and never while a history is replayed. */
export interface TelemetrySinks extends Sinks {
  [TELEMETRY_SINK]: {
    toolCallFinished(call: FinishedToolCall): void;
    /** `agent`: the agent that ended the turn (`default` for a turn naming none). */
    turnFinished(turn: { status: TurnStatus; agent?: string }): void;
    approvalOpened(wait: ApprovalWait): void;
    approvalClosed(wait: { callId: string }): void;
  };
}

/** Tollgate's span attributes beside the GenAI semantic conventions' `gen_ai.*` names. */
export const TOLLGATE_ATTRIBUTES = {
  effect: 'tollgate.effect',
  status: 'tollgate.status',
  code: 'tollgate.code',
  executions: 'tollgate.executions',
  approvalWaitMs: 'tollgate.approval_wait_ms',
  statusLookup: 'tollgate.status_lookup',
  idempotency: 'tollgate.idempotency',
  turnStatus: 'tollgate.turn.status',
  step: 'tollgate.step',
  attempt: 'tollgate.attempt',
} as const;
