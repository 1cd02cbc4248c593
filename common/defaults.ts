// Every default of Tollgate in one place. The config schema takes its defaults from here, and so do
// tool declarations and the workflows (which cannot read the config file), so a value is never
// written twice. Durations are in milliseconds.

/**
 * Where a turn ends with `history_limit`: a model step is not started once the turn's history has
 * this many events or bytes, 80% of the server's hard limits (51,200 events, 50 MB), so the turn
 * ends with its own status before the server would terminate it.
 */
export const HISTORY_LIMITS = { maxHistoryEvents: 40_960, maxHistoryBytes: 40 * 1024 * 1024 } as const;

/**
 * Delegation's bounds: how deep subagents may nest below the root turn (`maxDepth`), how many child
 * turns of one turn run at once (`maxConcurrentSubagents`), and how many handoffs one turn may make.
 */
export const DELEGATION_LIMITS = { maxDepth: 3, maxConcurrentSubagents: 4, maxHandoffs: 5 } as const;

/** Turn limits when neither the turn's input nor the worker's config sets them (no token budget: `maxTokens` has no default). */
export const DEFAULT_TURN_LIMITS = {
  maxSteps: 10,
  maxToolCalls: 20,
  errorBudget: 3,
  deadlineMs: 3_600_000,
  ...HISTORY_LIMITS,
  ...DELEGATION_LIMITS,
} as const;

/** The turn limits that may be 0 (no failures tolerated, no delegation, no handoffs); every other one is at least 1. */
export const LIMITS_ALLOWING_ZERO: readonly string[] = ['errorBudget', 'maxDepth', 'maxHandoffs'];

/** The name of every turn limit a turn's input may set. */
export const TURN_LIMIT_NAMES: readonly string[] = [...Object.keys(DEFAULT_TURN_LIMITS), 'maxTokens'];

/**
 * When a call that ran keeps only a reference to its arguments in the turn's messages (what later
 * model steps are sent): a string in them longer than `stringChars`, or their JSON longer than `jsonChars`.
 */
export const ARGUMENTS_BY_REFERENCE = { stringChars: 2_000, jsonChars: 4_096 } as const;

/** A tool's policy when its declaration and the config leave it out. */
export const TOOL_DEFAULTS = {
  timeoutMs: 30_000,
  maxAttempts: 3,
  maxOutputChars: 8_000,
  concurrency: 8,
  approvalTimeoutMs: 24 * 3_600_000,
} as const;

/**
 * The idempotency store's retention: committed intents older than `retentionMs` (7 days, longer than
 * any turn may wait for an approval) are pruned when a worker starts and every `pruneIntervalMs`.
 */
export const STORE_RETENTION_DEFAULTS = { retentionMs: 7 * 24 * 3_600_000, pruneIntervalMs: 3_600_000 } as const;

/** How long an approved irreversible call may wait for a worker to start it; after that it did not run (`not_run`). */
export const DEFAULT_APPROVED_SCHEDULE_TO_START_MS = 3_600_000;

/**
 * What a write whose outcome is unknown does (config `outcomes`): `ask` waits for a person's
 * `resolve` for at most `resolveTimeoutMs`, after which the model gets `outcome_unknown`.
 */
export const OUTCOME_DEFAULTS = { onUnknown: 'ask', resolveTimeoutMs: 24 * 3_600_000 } as const;

/**
 * How a write's boundary retries an idempotency store that failed before the handler ran (the claim,
 * and the lookup's read): for at most `windowMs` (inside the activity's grace beyond the tool's
 * timeout, so the handler's own timeout still fits), backing off from `initialIntervalMs` up to
 * `maximumIntervalMs`. A store still failing after it leaves the call `not_run`: nothing happened.
 */
export const STORE_FAULT_RETRY = { windowMs: 2_500, initialIntervalMs: 100, maximumIntervalMs: 800 } as const;

/** The backoff between attempts of a retried call when the config's `retry` sets none. */
export const DEFAULT_RETRY_BACKOFF = { initialIntervalMs: 200, backoffCoefficient: 2, maximumIntervalMs: 5_000 } as const;

/**
 * A conversation's size bounds, in UTF-8 bytes of JSON (as Temporal counts a payload; it refuses
 * one over 2 MB): `inputBytes` for what it carries into continue-as-new and for the input of each
 * turn, `messageBytes` for one message it keeps (a longer one is kept cut short), `settingsBytes`
 * for its input apart from the carried state (model, tools, limits). Older messages that do not fit
 * are dropped, counted, and named to the model.
 */
export const CONVERSATION_BOUNDS = { inputBytes: 1_048_576, messageBytes: 262_144, settingsBytes: 262_144 } as const;

/** A conversation's defaults: the characters of earlier messages a turn is given, and turns per run before continue-as-new. */
export const CONVERSATION_DEFAULTS = { contextBudgetChars: 24_000, maxTurnsPerRun: 100 } as const;

/**
 * What a turn does when a model stream breaks after chunks went out (config `model.onInterruptedStream`),
 * and how long it waits for a person's `resume` decision before it stops (`model.resumeTimeout`).
 */
export const INTERRUPTED_STREAM_DEFAULTS = { onInterruptedStream: 'ask', resumeTimeoutMs: 15 * 60_000 } as const;

/** How long a model step may go without a heartbeat before another attempt takes it (config `model.heartbeatTimeout`). */
export const DEFAULT_MODEL_HEARTBEAT_TIMEOUT_MS = 30_000;

/** How long a provider's Retry-After is honoured at most. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 30_000;

/** Anthropic's API requires an output cap on every request; this one applies when the config sets none. */
export const DEFAULT_ANTHROPIC_MAX_OUTPUT_TOKENS = 4_096;

/** The task queue of the public contract. */
export const DEFAULT_TASK_QUEUE = 'tollgate';

/** The workflow type of the public contract. */
export const AGENT_TURN_WORKFLOW_TYPE = 'agentTurn';

/** The workflow type that lists the tools a task queue's workers serve (what the web inbox shows of a tool). */
export const TOOL_CATALOGUE_WORKFLOW_TYPE = 'toolCatalogue';

/**
 * What a turn keeps of the decisions it rejected: the newest `kept` (older ones are only counted),
 * each decision whole up to `decisionChars` characters of JSON, each reason up to `whyChars`.
 */
export const REJECTED_DECISION_BOUNDS = { kept: 20, decisionChars: 1_024, whyChars: 300 } as const;

/**
 * The largest decision (`approval` signal, `decide` update) a turn takes, in characters of its JSON.
 * A bigger `decide` update is refused by its validator, so it never reaches the history; a bigger
 * signal (which the server records before the workflow sees it) is rejected and kept cut short.
 */
export const MAX_DECISION_CHARS = 256 * 1024;

/**
 * The largest payload a message handler (signal or update) decodes, in bytes; a larger one is
 * recorded as a rejected decision without being parsed.
 */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/** How deep the arrays and objects of a message may nest; a deeper one is recorded as rejected without being parsed. */
export const MAX_MESSAGE_DEPTH = 32;

/** The longest text one conversation `send` takes, in characters. */
export const MAX_SEND_TEXT_CHARS = 100_000;

/**
 * Bounds of every sandboxed `shell` command. `cpuSeconds`, `addressSpaceBytes` and `fileSizeBytes` are rlimits of each
 * process; `processes` bounds the command's process tree (a pids cgroup when the worker can create one, else RLIMIT_NPROC
 * set inside the sandbox's user namespace); `memoryBytes` bounds the tree's memory where a cgroup v2 memory controller is
 * available; `outputBytes` is the most of stdout and stderr together read before the command is stopped.
 */
export const SHELL_LIMITS = {
  cpuSeconds: 30,
  addressSpaceBytes: 1024 * 1024 * 1024,
  fileSizeBytes: 64 * 1024 * 1024,
  processes: 64,
  memoryBytes: 1024 * 1024 * 1024,
  outputBytes: 1_000_000,
} as const;
