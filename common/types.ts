import type { ErrorCode, ToolCallStatus, ToolEffect, TurnStatus } from './codes';

/** One step of a scripted model: either tool calls or a final text. */
export type ScriptStep = { toolCalls: Array<{ tool: string; args: unknown }>; text?: string } | { text: string };

/** Which model a turn uses: a name from the config's model list, or the embedded scripted model. */
export type ModelSelection = string | { provider: 'scripted'; script?: ScriptStep[] };

/** Per-turn limits; anything left out comes from the config, then from the built-in defaults. */
export interface TurnLimits {
  maxSteps?: number;
  maxToolCalls?: number;
  errorBudget?: number;
  /** The turn ends with `deadline_exceeded` when a step would start later than this after its start. */
  deadlineMs?: number;
  /** The turn ends with `history_limit` when a step would start on a history of this many events (default 80% of Temporal's 51,200). */
  maxHistoryEvents?: number;
  /** The turn ends with `history_limit` when a step would start on a history of this many bytes (default 80% of Temporal's 50 MB). */
  maxHistoryBytes?: number;
  /**
   * The most tokens (input and output together) the turn's model steps may use; checked before each
   * step, which does not start when the usage so far plus the last step's input would pass it (the
   * next step's prompt holds the last one's). No budget when left out.
   */
  maxTokens?: number;
}

/** A turn's limits once the config and the defaults filled them in: every one set, the token budget only when given. */
export type ResolvedTurnLimits = Required<Omit<TurnLimits, 'maxTokens'>> & Pick<TurnLimits, 'maxTokens'>;

/** The input of the `agentTurn` workflow: plain JSON, so any Temporal client can start a turn. */
export interface AgentTurnInput {
  /** Names the business task; idempotency keys derive from it. */
  taskId: string;
  /** The user's request. */
  prompt: string;
  model?: ModelSelection;
  /** Narrows the tools this turn may call; all registered tools when left out. */
  tools?: string[];
  limits?: TurnLimits;
  /** Earlier messages of a conversation, before this prompt (the `conversation` workflow passes them). */
  history?: TurnMessage[];
  /**
   * The tokens left in the conversation's budget (the `conversation` workflow passes them): the turn's
   * budget is the smaller of this and `limits.maxTokens`.
   */
  tokenAllowance?: number;
}

/** The normalized result of one tool call, as the model sees it. */
export interface ToolResult {
  status: ToolCallStatus;
  /** The tool's output on success (after truncation and redaction). */
  data?: unknown;
  code?: ErrorCode;
  retryable?: boolean;
  /** The tool's own short message on failure; never a stack trace. */
  message?: string;
  /** When a person approved the call with edited arguments: who, and the arguments it ran with (as they may be shown). */
  edited?: { by?: string; args: unknown; message: string };
}

/** The record of one tool call, for people and programs inspecting a turn. */
export interface ToolEvent {
  callId: string;
  step: number;
  tool: string;
  effect: ToolEffect | 'unknown';
  status: ToolCallStatus;
  code?: ErrorCode;
  /** How many times the handler really ran (0 when the boundary refused the call, or a receipt answered it). */
  executions: number;
  durationMs: number;
  /** Characters of output before truncation. */
  originalSize: number;
  truncated: boolean;
  /** When a person approved the call with edited arguments: the digest of those shown, of those it ran with, and who edited. */
  edit?: CallEdit;
}

/** An approval with edited arguments, as its event records it. */
export interface CallEdit {
  originalDigest: string;
  editedDigest: string;
  editor?: string;
}

/** A tool call the model asked for. */
export interface ToolCallRequest {
  callId: string;
  tool: string;
  /** In a turn's messages, large arguments of a call that ran are an `ArgumentsReference` (common/call-arguments.ts). */
  args: unknown;
}

/** One message of a turn's conversation with the model. */
export type TurnMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; text?: string; toolCalls: ToolCallRequest[] }
  | { role: 'tool'; callId: string; tool: string; result: ToolResult };

/** Token counts, summed per turn. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** The result of the `agentTurn` workflow. */
export interface AgentTurnResult {
  taskId: string;
  status: TurnStatus;
  /** Why the model failed, when status is `model_failed`. */
  error?: { type: string; message: string };
  /** Model steps whose stream broke after chunks went out; none was replayed unasked (see each one's `decision`). */
  modelInterruptions: ModelInterruption[];
  /** When the turn stopped on a stream cut off after chunks went out: the text that had streamed (redacted, its last 8,000 characters). */
  partialText?: string;
  answer?: string;
  steps: number;
  toolCalls: ToolEvent[];
  usage: Usage;
  /** The turn's token budget (input and output together), when it had one. */
  tokenBudget?: number;
}

/** An irreversible call waiting for a human decision. */
export interface PendingApproval {
  callId: string;
  tool: string;
  /** The arguments as they may be shown: each secret (the worker's redaction patterns) replaced when `redactedValues` is set. */
  args: unknown;
  /** SHA-256 of the canonical JSON of the real arguments, the ones the call runs with (with `definitionDigest`: of `{ args, definitionDigest }`). */
  argsDigest: string;
  /** Tools from elsewhere (MCP): the digest of the tool's definition, which the digests bind too. */
  definitionDigest?: string;
  /** Strings in `args` whose secrets were replaced; left out when `args` are the real arguments. */
  redactedValues?: number;
  /**
   * With `redactedValues`: SHA-256 of the canonical JSON of `args` as shown, computed by the worker
   * from the real arguments. A decision may name it instead of `argsDigest`; it binds the decision
   * to the real arguments just as well, since the worker recorded both.
   */
  shownDigest?: string;
  /**
   * Which wait of this call this is: 1, then 2 and on when the call waits again (its write found not
   * applied). From round 2 on, a decision must name it (`round`), and a signed one signs it.
   */
  round: number;
  requestedAt: string;
  expiresAt: string;
}

/** A human decision on one pending call: the `approval` signal's and the `decide` update's argument. */
export interface ApprovalDecision {
  callId: string;
  decision: 'approve' | 'deny';
  approver?: string;
  reason?: string;
  /** When given, must equal the pending call's argsDigest (or its shownDigest, when its arguments were redacted). */
  argsDigest?: string;
  /**
   * Approvals only: the arguments the call is to run with instead, edited by the approver (then `argsDigest`, of the
   * arguments shown, is required). They are checked against the tool's schema and authorization like a model's call.
   */
  args?: unknown;
  /** Recorded on an accepted edit: the digest of the edited arguments, which the call runs with. */
  editedDigest?: string;
  /** The wait decided on (`pendingApprovals[].round`); required from round 2 on. */
  round?: number;
  /** Signed decisions (required when the worker has approver keys): the signing key's name, recorded as the approver. */
  keyId?: string;
  /** When the decision was signed, an ISO 8601 UTC time. */
  signedAt?: string;
  /** Base64 Ed25519 signature over the decision's signed fields (docs/approvals.md). */
  signature?: string;
}

/** A write whose outcome is unknown, waiting for a person's `resolve`. */
export interface PendingResolution {
  callId: string;
  tool: string;
  /** As shown: redacted like a pending approval's. */
  args: unknown;
  /** What a resolution must name: the same digest an approval of this call names (its shownDigest when redacted). */
  argsDigest: string;
  /** When the arguments were redacted: the digest of them as shown, which a resolution may name instead. */
  shownDigest?: string;
  /** Why nobody can tell whether it took effect. */
  reason: string;
  /** Which wait for a resolution of this call this is (see PendingApproval's `round`). */
  round: number;
  since: string;
  expiresAt: string;
}

/** A person's word on a write whose outcome was unknown: the `resolve` update's and signal's argument. */
export interface ResolutionDecision {
  callId: string;
  outcome: 'applied' | 'not_applied';
  /** Must equal the pending resolution's argsDigest. */
  argsDigest: string;
  resolver?: string;
  note?: string;
  /** The wait decided on (`pendingResolutions[].round`); required from round 2 on. */
  round?: number;
  /** Signed resolutions (required when the worker has approver keys), as for approvals (docs/approvals.md). */
  keyId?: string;
  signedAt?: string;
  signature?: string;
}

/** What the `resolve` update returns for an accepted resolution. */
export interface ResolutionReceipt {
  callId: string;
  outcome: 'applied' | 'not_applied';
  accepted: true;
}

/** A decision that changed nothing, and why. */
export interface RejectedDecision {
  /** What was sent, when its JSON is at most 1,024 characters; a {@link TruncatedDecision} otherwise. */
  decision: unknown;
  /** Why it was refused, at most 300 characters. */
  why: string;
  at: string;
}

/** A rejected decision too large to keep whole: the first 1,024 characters of its JSON, and how long that JSON was. */
export interface TruncatedDecision {
  truncated: true;
  jsonChars: number;
  json: string;
}

/** What the `decide` update returns for an accepted decision. */
export interface DecisionReceipt {
  callId: string;
  decision: 'approve' | 'deny';
  accepted: true;
  /** With edited arguments: their digest, and the idempotency key is theirs. */
  editedDigest?: string;
}

/** What a turn does now: asks the model, runs tools, waits for a human (an approval, a resolution, a resume decision), or is done. */
export type TurnPhase = 'model' | 'tools' | 'awaiting_approval' | 'awaiting_resolution' | 'interrupted' | 'finished';

/** A model step whose stream broke after chunks went out, waiting for a person's `resume` decision. */
export interface PendingResume {
  step: number;
  /** Chunks that had gone out before the break. */
  chunks: number;
  /** The text that had streamed (redacted, its last 8,000 characters). */
  partialText: string;
  /** Which wait of this step this is: 2 and on when a retried stream broke again (see PendingApproval's `round`). */
  round: number;
  since: string;
  /** When the turn stops if nobody decided (config `model.resumeTimeout`). */
  expiresAt: string;
}

/** A person's decision on an interrupted stream: the `resume` signal's and update's argument. */
export interface ResumeDecision {
  /** The step that waits (`pendingResume.step`): a decision meant for another step changes nothing. */
  step: number;
  /** `retry` asks the model again for the same step; `stop` ends the turn `model_failed`. */
  decision: 'retry' | 'stop';
  /** Who decided, for the record; a signed decision's is the name of its key. */
  by?: string;
  /** The wait decided on (`pendingResume.round`); required from round 2 on. */
  round?: number;
  /** Signed decisions (required when the worker has approver keys), as for approvals (docs/approvals.md). */
  keyId?: string;
  signedAt?: string;
  signature?: string;
}

/** What the `resume` update returns for an accepted decision. */
export interface ResumeReceipt {
  step: number;
  decision: 'retry' | 'stop';
  accepted: true;
}

/** What the `state` query returns while a turn runs and after it ended. */
export interface TurnState {
  taskId: string;
  status: 'running' | TurnStatus;
  /** What the turn does now. */
  phase: TurnPhase;
  step: number;
  pendingApprovals: PendingApproval[];
  /** Writes whose outcome is unknown, waiting for a person to say whether they took effect (config `outcomes.onUnknown: ask`). */
  pendingResolutions?: PendingResolution[];
  /** Resolutions that were accepted, oldest first. */
  resolutions?: ResolutionDecision[];
  /** Decisions that were accepted, by call id. */
  decisions: ApprovalDecision[];
  /** The newest 20 rejected decisions, oldest first. */
  rejectedDecisions: RejectedDecision[];
  /** Rejected decisions dropped from `rejectedDecisions` to keep it at 20. */
  rejectedDecisionsDropped: number;
  toolCalls: ToolEvent[];
  modelInterruptions: ModelInterruption[];
  /** Tokens the turn's model steps used so far. */
  usage: Usage;
  /** The turn's token budget, when it has one. */
  tokenBudget?: number;
  /** Set while the turn waits in phase `interrupted` for a `resume` decision. */
  pendingResume?: PendingResume;
}

/** A model step whose stream broke after chunks had gone out; it was never replayed unasked. */
export interface ModelInterruption {
  step: number;
  message: string;
  /**
   * What followed: a person's `retry` or `stop`, `timeout` (nobody decided), `stop` by config, or
   * `fresh_step` by config.
   */
  decision: 'retry' | 'stop' | 'timeout' | 'fresh_step';
  /** Who decided, when a person did and named themselves. */
  by?: string;
}

/** The input of the `conversation` workflow: plain JSON like a turn's. */
export interface ConversationInput {
  conversationId: string;
  model?: ModelSelection;
  tools?: string[];
  limits?: TurnLimits;
  /** Characters of earlier messages (their JSON) a turn gets at most; the oldest pairs are dropped first. */
  contextBudgetChars?: number;
  /** Continue as new after this many turns in one run, even before Temporal suggests it. */
  maxTurnsPerRun?: number;
  /**
   * The conversation's token budget: the most tokens (input and output) all its turns may use
   * together, across continue-as-new; config `limits.maxConversationTokens` when left out, and none
   * when both are. The `raiseTokenBudget` update raises it.
   */
  maxTokens?: number;
  /** Carried across continue-as-new. */
  history?: TurnMessage[];
  turns?: number;
  /** The token ledger, carried across continue-as-new. */
  tokens?: TokenLedger;
  /** Carried across continue-as-new: the oldest messages dropped to keep the history within its bounds (CONVERSATION_BOUNDS). */
  omittedMessages?: number;
}

/** What a conversation's turns used of its token budget. */
export interface TokenLedger {
  used: Usage;
  /** The budget in force (input and output tokens together); none when left out. */
  budget?: number;
}

/** What the `history` query returns, and the conversation's result once closed. */
export interface ConversationState {
  conversationId: string;
  turns: number;
  history: TurnMessage[];
  closed: boolean;
  /** Tokens its turns used against its budget. */
  tokens: TokenLedger;
  /** The oldest messages dropped from `history` to keep it within its bounds; left out when none were. */
  omittedMessages?: number;
}
