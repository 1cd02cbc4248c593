// The internal contract between the workflows and the activities of one worker fleet: activity
// names, inputs and results, the heartbeat shape, failure types and shared timing constants.
// Other programs rely only on common/types.ts; these may change between versions of Tollgate.
import type { ApproverGroups } from './approver-groups';
import type { ErrorCode, ToolEffect } from './codes';
import { FAILURE_TYPE, failureTypes } from './failures';
import type { IdempotencyOutcome, StatusLookupAnswer } from './telemetry';
import type { ResultReference, StepMessage, TranscriptReference } from './kept-results';
import type { Grant, GrantRequest } from './contract/decisions';
import type { ApprovalRecord, CallEdit, DelegateRecord, ToolCallRequest, ToolCatalogue, ToolResult } from './contract/tools';
import type { AgentTurnInput, ModelSelection, ResolvedTurnLimits, TurnLimits, Usage } from './contract/turn';
import type { AgentReference } from './contract/agent';
import type { StandInStatement } from './stand-in';
import type { NotificationReceipt, NotifySettings, SendNotificationInput } from './contract/notifications';

/** The registered names of the activities, as both sides spell them. */
export const ACTIVITY_NAMES = {
  modelStep: 'modelStep',
  runTool: 'runTool',
  lookupStatus: 'lookupStatus',
  turnSettings: 'turnSettings',
  resolveIntent: 'resolveIntent',
  checkCall: 'checkCall',
  describeTools: 'describeTools',
  decideByPolicy: 'decideByPolicy',
  recordGrant: 'recordGrant',
  agentInstructions: 'agentInstructions',
  sendNotification: 'sendNotification',
} as const;

/**
 * The activities a worker registers, as the workflows call them: one entry per name of
 * {@link ACTIVITY_NAMES}. `createActivities` is declared to return this, so both sides compile against one list.
 */
export interface Activities {
  modelStep(input: ModelStepInput): Promise<ModelStepResult>;
  runTool(input: RunToolInput): Promise<BoundaryResult>;
  lookupStatus(input: LookupStatusInput): Promise<StatusLookup>;
  turnSettings(input?: TurnSettingsInput): Promise<TurnSettings>;
  resolveIntent(input: ResolveIntentInput): Promise<ResolveIntentResult>;
  checkCall(input: CheckCallInput): Promise<CheckedToolCall>;
  describeTools(): Promise<ToolCatalogue>;
  decideByPolicy(input: PolicyInput): Promise<PolicyVerdict>;
  recordGrant(input: RecordGrantInput): Promise<RecordGrantResult>;
  agentInstructions(input: AgentInstructionsInput): Promise<string>;
  /** Tells one channel of one wait (docs/approvals.md, "Notifications"); never throws for the channel. */
  sendNotification(input: SendNotificationInput): Promise<NotificationReceipt>;
}

/** Room an activity gets beyond the tool's own timeout, so the boundary's timer fires first. */
export const ACTIVITY_GRACE_MS = 5_000;

/** The failure type of a write whose handler was cut off (timeout, reset, crash): it may or may not have taken effect. */
export const WRITE_INTERRUPTED = FAILURE_TYPE.write_interrupted;

/** Failure types of a model step that retry policies name (common/failures.ts says what each means). */
export const MODEL_FAILURES = {
  unavailable: FAILURE_TYPE.model_unavailable,
  streamInterrupted: FAILURE_TYPE.stream_interrupted,
  error: FAILURE_TYPE.model_error,
  invalidModel: FAILURE_TYPE.invalid_model,
  keptContentMissing: FAILURE_TYPE.kept_content_missing,
} as const;

/** The model step's failures that its retry policy never repeats. */
export const MODEL_STEP_NON_RETRYABLE: readonly string[] = failureTypes('model_step', 'final');

/**
 * What a model step has streamed so far: its heartbeat details, read by its next attempt and by live
 * views, and the details of its `stream_interrupted` failure, so the workflow knows what went out.
 */
export interface StreamProgress {
  chunks: number;
  /** The text streamed so far (its last 8,000 characters). */
  text: string;
}

/** The backoff between attempts of a retried call, in milliseconds. */
export interface RetryBackoff {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
}

/** What the workflow needs to run a tool: data recorded in history, never the handler itself. */
export interface ToolPolicy {
  effect: ToolEffect;
  timeoutMs: number;
  maxAttempts: number;
  /** How long an irreversible write waits for a human decision. */
  approvalTimeoutMs: number;
  /** How long a running call may go without a heartbeat before Temporal takes its worker for lost; no heartbeat timeout when left out. */
  heartbeatTimeoutMs?: number;
  /**
   * Irreversible writes: how long the approved call may wait for a worker to start it (config
   * `approvals.scheduleToStart`); after that it did not run and ends as `not_run`. Irreversible
   * writes only.
   */
  scheduleToStartMs?: number;
  /** The backoff between attempts, from the worker's config. */
  retry: RetryBackoff;
  /** Reads only (config `temporal.worker.localReads`): the call runs as a local activity. Not in the digest: where a read runs does not change what it runs. */
  local?: true;
  /** Tools from elsewhere (MCP): the digest of the definition the model saw; only a worker serving the same definition runs the call. */
  definitionDigest?: string;
  /**
   * SHA-256 of what the model step's worker declared for the tool: effect, timeout, attempts,
   * output limit, approval and start bounds, and the JSON schema of its arguments. `runTool` runs
   * the call only when its own registry declares the same.
   */
  policyDigest: string;
}

/** A tool call after the boundary's first checks: either runnable with its policy, or refused. */
export type CheckedToolCall = ToolCallRequest & {
  /** SHA-256 of the canonical JSON of the arguments: what an approval must name. */
  argsDigest: string;
  /** One line for the Web UI, e.g. `save_draft drafts/brief.md`: the tool and chosen fields, redacted. */
  summary?: string;
  /**
   * When the arguments hold a secret (the worker's redaction patterns): the copy shown to people,
   * each secret replaced, and how many strings changed. `args` stays real: it runs the call and
   * `argsDigest` covers it. Left out when nothing was redacted.
   */
  shownArgs?: unknown;
  /** SHA-256 of the canonical JSON of `shownArgs`: a decision may name it instead of `argsDigest` (docs/security.md, Redaction). */
  shownDigest?: string;
  redactedValues?: number;
  /**
   * Whether the call waits for a decision before it runs, when the tool's declaration says otherwise
   * than its effect (its `needsApproval`, evaluated on the arguments by the check); the effect's
   * `needsApproval` when left out.
   */
  needsApproval?: boolean;
  /** The turn's agent (set by the workflow before the call runs): `runTool` checks the executing worker declares it alike. */
  agent?: AgentReference;
  /** A handoff (`transfer_to_<agent>`): the agent the turn goes to from the next step, and the reason the model gave. Runs no tool. */
  handoff?: { to: string; reason?: string };
  /**
   * A delegate call (a subagent, offered as a tool of its name): the agent and what the model asked
   * of it. The workflow runs it as a child turn; `policy.effect` is the strongest effect among the
   * tools the subagent may use.
   */
  delegate?: { agent: string; request: string };
} & ({ policy: ToolPolicy; refusal?: undefined } | { policy?: ToolPolicy; refusal: { code: ErrorCode; message: string } });

/** The input of the `modelStep` activity. */
export interface ModelStepInput {
  taskId: string;
  step: number;
  model?: ModelSelection;
  /**
   * The turn's messages after those of `earlier` (all of them when it is left out); a large tool
   * result as a reference to the content its call kept. The step reads both back.
   */
  messages: StepMessage[];
  /** The transcript the previous model step kept: the turn's first messages, not sent again. */
  earlier?: TranscriptReference;
  /** The tools this turn may call; all registered tools when left out. */
  allowedTools?: string[];
  /**
   * The turn's agent (left out for the default agent): the step runs only on a worker that declares
   * it with the same digest, under its instructions, model settings and output schema.
   * `instructions` carries what the agent's instructions function returned at the turn's start.
   */
  agent?: AgentReference & { instructions?: string };
}

/** What one model step produced, its tool calls already checked against schema and authorization. */
export interface ModelStepResult {
  text?: string;
  toolCalls: CheckedToolCall[];
  usage: Usage;
  /** The messages this step was sent, kept once in the store (left out when the store cannot keep them). */
  transcript?: TranscriptReference;
  /**
   * An agent with an output schema, on a reply without tool calls: the answer parsed and checked
   * against the schema (`value`), or what did not fit (`problems`, one line each).
   */
  output?: { valid: true; value: unknown } | { valid: false; problems: string };
}

/** The input of the `runTool` activity. */
export interface RunToolInput {
  taskId: string;
  callId: string;
  tool: string;
  args: unknown;
  allowedTools?: string[];
  /**
   * The effect the workflow decided the call runs under (the model step's worker declared it).
   * `runTool` refuses the call when its own registry declares another. Left out by a caller that is
   * not a turn (a test, a script starting the activity): the call runs under this worker's declaration.
   */
  effect?: ToolEffect;
  /** The definition digest from the call's recorded policy; must equal the executing worker's. */
  definitionDigest?: string;
  /** The policy digest from the call's recorded policy; must equal the executing worker's. */
  policyDigest?: string;
  /** The turn's agent: the executing worker refuses the call when it declares the agent differently. */
  agent?: AgentReference;
}

/**
 * The boundary's normalized result of one call: what the model sees, how often the handler ran,
 * and how big its output was. `runTool` returns it, each effect strategy returns it, and the
 * details of a retryable read failure carry it, so the workflow knows how often the handler ran.
 */
export interface BoundaryResult {
  result: ToolResult;
  /** Handler executions (0 when the boundary refused the call, or a receipt answered it). */
  executions: number;
  /** Characters of output before truncation. */
  originalSize: number;
  truncated: boolean;
  /** Writes: what the intent store said (traces only). */
  idempotency?: IdempotencyOutcome;
  /** Reversible writes: the last status lookup's answer (set by the workflow's strategy; traces only). */
  statusLookup?: StatusLookupAnswer;
  /** Irreversible writes: how long the call waited for its decision (set by the workflow's strategy). */
  approvalWaitMs?: number;
  /** When a person approved the call with edited arguments (set by the workflow, for the call's event). */
  edit?: CallEdit;
  /** Irreversible writes: who decided, and how (set by the workflow's strategy, for the call's event and metrics). */
  approval?: ApprovalRecord;
  /** Writes: the earlier call of the task whose receipt answered this one (set by the workflow's strategy, for the call's event). */
  repeatOf?: string;
  /** `runTool`: the result, kept once in the shared store, as later model steps are sent it. */
  kept?: ResultReference;
  /** A delegate call: the subagent, its child turn's workflow id and how it ended (set by the workflow, for the call's event). */
  delegate?: DelegateRecord;
}

/** The input of the `decideByPolicy` local activity: one irreversible call, before anyone is asked. */
export interface PolicyInput {
  workflowId: string;
  taskId: string;
  /** The conversation's workflow id when the turn is one of a conversation (grants scoped to it). */
  conversationId?: string;
  callId: string;
  tool: string;
  args: unknown;
  argsDigest: string;
  /** The turn's clock, in milliseconds: grants expire and caps' windows are counted by it. */
  at: number;
  /** Digests of arguments a person denied in this turn: no rule or grant approves them again. */
  deniedDigests: string[];
  /** The turn's agent: its approval rules are matched before the worker's. */
  agent?: string;
}

/** What the rules and grants decided on a call: approve or deny by one of them, or ask a person. */
export type PolicyVerdict =
  | { decision: 'approve' | 'deny'; via: 'rule' | 'grant'; by: string; argsDigest: string; reason?: string }
  | { decision: 'ask'; note?: string; rule?: string };

/** The input of the `recordGrant` local activity: a grant a person gave with an approval. */
export interface RecordGrantInput {
  workflowId: string;
  taskId: string;
  conversationId?: string;
  callId: string;
  round: number;
  tool: string;
  grant: GrantRequest;
  grantedBy: string;
  at: number;
  keyId?: string;
  signature?: string;
}

/** The grant as recorded, or why it was not (its condition does not compile): the approval stands either way. */
export type RecordGrantResult = { recorded: true; grant: Grant } | { recorded: false; why: string };

/** The input of the `checkCall` local activity: arguments a person edited, checked like a model's call. */
export interface CheckCallInput {
  taskId: string;
  callId: string;
  tool: string;
  args: unknown;
  allowedTools?: string[];
}

/** The input of the `lookupStatus` activity. */
export interface LookupStatusInput {
  taskId: string;
  callId: string;
  tool: string;
  args: unknown;
  /** Only the store's receipt is asked (not the tool's status check): what a call that waits for a person asks before anyone is asked. */
  receiptOnly?: boolean;
  /**
   * The lookup before the call's first run (it has run nothing yet): only then does a store with no
   * row of the intent settle what the check cannot tell, as not applied. After a run, a missing row
   * proves nothing (a handler's failure releases its row even where the effect may have landed).
   */
  beforeFirstRun?: boolean;
}

/** What the status lookup of a write found. */
export type StatusLookup =
  /** `callId`: the call that committed the receipt, when the store's receipt answered (a repeat of it). */
  | { state: 'applied'; receipt: ToolResult; source: 'store' | 'tool'; callId?: string }
  | { state: 'not_applied' }
  | {
      state: 'unknown';
      reason: string;
      /** When an attempt may still be applying: how much longer its lease runs, by the lookup's clock. Asking again after it may tell. */
      inFlightForMs?: number;
    };

/** What a turn does with a stream cut off after chunks went out (config `model.onInterruptedStream`). */
export type InterruptedStreamPolicy = 'ask' | 'stop' | 'fresh_step';

/** The input of the `turnSettings` local activity: the agent a turn names (left out for the default agent). */
export interface TurnSettingsInput {
  agent?: string;
  /** A subagent's turn: the agents above it on its lineage path, root first, whose approver groups apply to it too. */
  above?: string[];
}

/** What a turn needs of its agent, as the worker declares it: recorded once in the turn's settings. */
export interface AgentTurnSettings extends AgentReference {
  /** The agent's tools (all registered tools when left out); a turn's `tools` narrow them further. */
  tools?: string[];
  /** The agent's limits: over the config's, and a turn's own may only lower them. */
  limits?: TurnLimits;
  /** The model the agent's steps use when the turn names none. */
  model?: string;
  /** Where the system message comes from: the agent's text, a function run once per turn (`agentInstructions`), or Tollgate's own. */
  instructions: 'text' | 'function' | 'none';
  /** Whether the final answer must fit an output schema, and how many answers that do not fit are sent back before `output_invalid`. */
  output: boolean;
  outputRetries: number;
  /** The agent's approver groups, on top of the worker's: a call its groups name needs an approver both allow. */
  groups?: ApproverGroups;
  /** The agents it may hand the turn to, as this worker declares them: a handoff goes on only to the same definition. */
  handoffs?: AgentReference[];
}

/** The input of the `agentInstructions` activity: the agent whose instructions function runs, on the turn's input. */
export interface AgentInstructionsInput {
  agent: AgentReference;
  input: AgentTurnInput;
}

/** What the `turnSettings` local activity returns at a turn's start: the worker's configured limits, recorded once in history. */
export interface TurnSettings {
  /** The agent the turn named, as this worker declares it. */
  agent?: AgentTurnSettings;
  /** The agent the turn named when this worker declares no such agent, and those it declares. */
  unknownAgent?: { name: string; known: string[] };
  /** The approver groups of the agents above a subagent's turn (`above`) that declare any, root first. */
  aboveGroups?: ApproverGroups[];
  limits: ResolvedTurnLimits;
  /** Config `limits.maxConversationTokens`: a conversation's token budget when its input sets none (left out when unset). */
  conversationMaxTokens?: number;
  /** Config `approvals`: whether a decision must name the digest, and the keys it must be signed with. */
  approvals: {
    requireDigest: boolean;
    /** Approver public keys (raw, base64) by name; when present, every decision must be signed by one. Left out when signing is off. */
    publicKeys?: Record<string, string>;
    /** How old a signature's `signedAt` may be; present with `publicKeys`. */
    signatureMaxAgeMs?: number;
    /** Config `approvals.groups`: who may decide on which tool's calls; left out when none is set. */
    groups?: ApproverGroups;
    /**
     * Whether the worker decides by approval rules and grants (`decideByPolicy`) before asking a
     * person. Left out by workers before them: then every irreversible call asks, as their turns did.
     */
    policies?: boolean;
    /** The stand-ins' statements whose period has not ended (`approvals.standInsFile`), with signing on; left out when there are none. */
    standIns?: StandInStatement[];
    /** Config `approvals.notify` (and `createWorker({ notify })`): the routes of notifications; left out when none is set. */
    notify?: NotifySettings;
  };
  /** Config `model.onInterruptedStream` and `model.resumeTimeout`. */
  interruptedStreams: {
    onInterruptedStream: InterruptedStreamPolicy;
    resumeTimeoutMs: number;
    /** Config `model.heartbeatTimeout`: the model step's heartbeat timeout (left out by workers before it: 30 s). */
    heartbeatTimeoutMs?: number;
  };
  /** Whether the worker counts calls and turns (config `telemetry.prometheus`); left out when it does not. */
  telemetry?: { metrics: boolean };
  /** What a write whose outcome is unknown does (config `outcomes`). */
  outcomes: { onUnknown: 'ask' | 'report'; resolveTimeoutMs: number };
}

/** The input of the `resolveIntent` activity: a person's word on a write whose outcome was unknown. */
export interface ResolveIntentInput {
  taskId: string;
  callId: string;
  tool: string;
  args: unknown;
  outcome: 'applied' | 'not_applied';
  /** Who said so (a person's name, a key's name, or `status check`). */
  resolver: string;
  /** With `applied`: the receipt the intent is committed with. */
  receipt?: ToolResult;
}

/** What the `resolveIntent` activity did to the intent's record. */
export interface ResolveIntentResult {
  key: string;
  /**
   * `committed`: the receipt was recorded; `released`: a started record was given up; `absent`: there was nothing to give up;
   * `unrecorded`: the store kept failing, and the record stays as it was.
   */
  store: 'committed' | 'released' | 'absent' | 'unrecorded';
}
