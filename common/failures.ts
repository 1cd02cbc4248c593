// The one catalogue of the failure types that cross the workflow boundary: the codes of tool calls,
// the types of the ApplicationFailures activities and workflows throw, and what a retry policy does
// with each. Every list of failure types (ERROR_CODES, NON_RETRYABLE_CODES, MODEL_FAILURES, the
// policies' nonRetryableErrorTypes) derives from it, and every throw and catch site names its type
// through FAILURE_TYPE, so a misspelt type does not compile. Pure: the workflows import it too.

/** Who raises a failure of this type. */
export type FailureSource =
  /** A tool call's outcome: `ToolResult.code` and `ToolEvent.code`, and the type of a failure `runTool` throws for it. */
  | 'tool_call'
  /** `runTool` on a write whose handler was cut off. */
  | 'write'
  /** `modelStep`. */
  | 'model_step'
  /** A workflow, to its caller: a refused input, update or message. */
  | 'workflow';

/** What an automatic retry does with a failure of this type. */
export type FailureRetry =
  /** The activity's retry policy tries again. */
  | 'retried'
  /** Never retried: thrown non-retryable, and named in the retry policies' `nonRetryableErrorTypes`. */
  | 'final'
  /** Decided in the workflow itself: no activity throws it, so no retry policy meets it. */
  | 'not_thrown';

interface FailureEntry {
  source: FailureSource;
  retry: FailureRetry;
}

/** Every failure type, in the order the lists derived from it keep. */
export const FAILURE_CATALOGUE = {
  unknown_tool: { source: 'tool_call', retry: 'final' },
  invalid_arguments: { source: 'tool_call', retry: 'final' },
  forbidden: { source: 'tool_call', retry: 'final' },
  transient_failure: { source: 'tool_call', retry: 'retried' },
  tool_failure: { source: 'tool_call', retry: 'final' },
  outcome_unknown: { source: 'tool_call', retry: 'final' },
  denied: { source: 'tool_call', retry: 'not_thrown' },
  approval_expired: { source: 'tool_call', retry: 'not_thrown' },
  /**
   * Nothing ran: an approved irreversible call that no worker started within its schedule-to-start
   * bound, or a write whose intent the idempotency store could not record before its handler.
   */
  not_run: { source: 'tool_call', retry: 'final' },
  /**
   * A delegate call or handoff that must not go on: past `maxDepth`, an agent already on the lineage
   * path (a cycle), or past `maxHandoffs`. Nothing was started; the turn goes on and its model is told.
   */
  delegation_refused: { source: 'tool_call', retry: 'not_thrown' },
  /** A write whose handler was cut off (timeout, reset, crash): it may or may not have taken effect. */
  write_interrupted: { source: 'write', retry: 'final' },
  /** 429, 5xx, 529 or a connection error before any chunk: retried, after Retry-After when given. */
  model_unavailable: { source: 'model_step', retry: 'retried' },
  /** The input names no usable model. */
  invalid_model: { source: 'model_step', retry: 'final' },
  /** The worker running the step declares the turn's agent differently (its digest differs) or not at all: it refuses the step. */
  agent_mismatch: { source: 'model_step', retry: 'final' },
  /** The stream broke after chunks went out: never replayed automatically. */
  stream_interrupted: { source: 'model_step', retry: 'final' },
  /** Anything else the provider refused: retrying cannot help. */
  model_error: { source: 'model_step', retry: 'final' },
  /**
   * What the turn kept in the store (earlier messages, a tool result) is not there for this step:
   * retried (a store briefly out of reach); one whose digest differs is thrown non-retryable.
   */
  kept_content_missing: { source: 'model_step', retry: 'retried' },
  /** A turn's or a conversation's input, or a message to one, that the workflow refuses. */
  invalid_input: { source: 'workflow', retry: 'final' },
  /** An approval with edited arguments that its update validator refuses. */
  invalid_edit: { source: 'workflow', retry: 'final' },
  /** A conversation's message refused because its next turn could not stay within the token budget. */
  token_budget_exhausted: { source: 'workflow', retry: 'final' },
} as const satisfies Record<string, FailureEntry>;

type Catalogue = typeof FAILURE_CATALOGUE;

/** Every failure type of the catalogue. */
export type FailureType = keyof Catalogue;

/** The failure types one source raises. */
export type FailureTypeOf<Source extends FailureSource> = {
  [Type in FailureType]: Catalogue[Type]['source'] extends Source ? Type : never;
}[FailureType];

/** Each failure type by its own name, for the sites that throw or catch it: `FAILURE_TYPE.invalid_input`. */
export const FAILURE_TYPE = Object.fromEntries(Object.keys(FAILURE_CATALOGUE).map((type) => [type, type])) as {
  readonly [Type in FailureType]: Type;
};

/** The failure types of one source, in catalogue order; with `retry`, only those an automatic retry treats so. */
export function failureTypes<Source extends FailureSource>(source: Source, retry?: FailureRetry): Array<FailureTypeOf<Source>> {
  return (Object.entries(FAILURE_CATALOGUE) as Array<[FailureType, FailureEntry]>)
    .filter(([, entry]) => entry.source === source && (retry === undefined || entry.retry === retry))
    .map(([type]) => type as FailureTypeOf<Source>);
}

/** Whether an automatic retry may repeat a failure of this type. */
export function isRetried(type: FailureType): boolean {
  return FAILURE_CATALOGUE[type].retry === 'retried';
}
