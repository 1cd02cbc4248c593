import { failureTypes, type FailureTypeOf } from './failures';

/** The effect a tool declares: it decides retry, idempotency and approval together. */
export type ToolEffect = 'read' | 'reversible_write' | 'irreversible_write';

/** Every effect level, in order of the harm a blind retry could do. */
export const TOOL_EFFECTS: readonly ToolEffect[] = ['read', 'reversible_write', 'irreversible_write'];

/** Stable error codes the model, retry policies and other programs rely on: the tool-call failures of common/failures.ts. */
export type ErrorCode = FailureTypeOf<'tool_call'>;

/** Every error code, also used as `ApplicationFailure` types. */
export const ERROR_CODES: readonly ErrorCode[] = failureTypes('tool_call');

/** Codes that no automatic retry may repeat. */
export const NON_RETRYABLE_CODES: readonly ErrorCode[] = failureTypes('tool_call', 'final');

/** How a tool call ended: `denied` is its own status and spends no error budget. */
export type ToolCallStatus = 'success' | 'error' | 'denied';

/**
 * How a turn ended; `history_limit` when its history neared Temporal's limits (see HISTORY_LIMITS),
 * `token_budget_exhausted` when its next model step would have spent more tokens than its budget allows,
 * `output_invalid` when an agent's final answer still did not fit its output schema after the answers it was sent back for.
 */
export type TurnStatus =
  | 'completed'
  | 'step_limit'
  | 'tool_call_limit'
  | 'error_budget_exhausted'
  | 'deadline_exceeded'
  | 'model_failed'
  | 'history_limit'
  | 'token_budget_exhausted'
  | 'output_invalid';
