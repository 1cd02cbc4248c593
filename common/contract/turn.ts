import type { TurnStatus } from '../codes';
import type { TurnMessage } from './conversation';
import type {
  ApprovalDecision,
  PendingApproval,
  PendingResolution,
  PendingResume,
  RejectedDecision,
  ResolutionDecision,
  WaitBelow,
} from './decisions';
import type { ToolEvent } from './tools';
import type { TurnNotificationReceipt } from './notifications';
import type { AgentReference } from './agent';

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
  /** How deep delegation may go below this turn's root: a subagent's turn at a depth past it is refused (`delegation_refused`). */
  maxDepth?: number;
  /** How many child turns (subagents) of one turn run at once; further delegate calls of a step wait for one to end. */
  maxConcurrentSubagents?: number;
  /** How many times one turn may hand itself to another agent; a handoff past it is refused (`delegation_refused`). */
  maxHandoffs?: number;
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
  /**
   * The agent that runs the turn, by name (`createWorker({ agents })` or the config's `agents.<name>`):
   * its instructions, model settings, tools, limits and typed output. Left out: the default agent
   * (Tollgate's own system message, every registered tool).
   */
  agent?: string;
  /** Set by a parent turn on the child turn it starts for a delegate call: where in the tree this turn stands. */
  lineage?: TurnLineage;
}

/** Where a subagent's turn stands in its tree of turns: its root, its parent and the call that started it. */
export interface TurnLineage {
  /** The root turn's workflow id. */
  rootWorkflowId: string;
  /** The turn that started this one. */
  parentWorkflowId: string;
  /** The parent's call that started this turn. */
  parentCallId: string;
  /** Agent names from the root's agent down to this turn's agent (`default` for a turn naming none). */
  path: string[];
  /** What the parent's model asked the subagent (raw; escaped when shown). */
  request: string;
  /** 1 for a child of the root. */
  depth: number;
}

/** One handoff of a turn: from one agent to another at a step, with the reason the model gave. */
export interface TurnHandoff {
  from: string;
  to: string;
  step: number;
  reason?: string;
}

/** Token counts, summed per turn. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** The result of the `agentTurn` workflow; `Output` is the type of the agent's typed answer (`AgentOutput<typeof agent>`). */
export interface AgentTurnResult<Output = unknown> {
  taskId: string;
  status: TurnStatus;
  /** Why the model failed, when status is `model_failed`; why the last answer did not fit the agent's output schema, when `output_invalid`. */
  error?: { type: string; message: string };
  /** The agent that ran the turn (left out for the default agent). */
  agent?: AgentReference;
  /** The agent's typed answer, parsed from `answer` and checked against its output schema (status `completed` only). */
  output?: Output;
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
  /** The turn's handoffs from one agent to another, in order (left out when there were none). */
  handoffs?: TurnHandoff[];
}

/** What a turn does now: asks the model, runs tools, waits for a human (an approval, a resolution, a resume decision), or is done. */
export type TurnPhase = 'model' | 'tools' | 'awaiting_approval' | 'awaiting_resolution' | 'interrupted' | 'finished';

/** What the `state` query returns while a turn runs and after it ended. */
export interface TurnState {
  taskId: string;
  /** The model's text of the turn's steps so far, joined (its newest 8,000 characters): what a person deciding on a call reads of the turn. */
  modelText?: string;
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
  /** The agent that runs the turn, as its settings recorded it (left out for the default agent): who asks, for the people who decide. */
  agent?: AgentReference;
  /** Every notification of the turn's waits (config `approvals.notify`), its newest 100: who was told of which call, when, what failed. */
  notifications?: TurnNotificationReceipt[];
  /** The turn's handoffs so far, in order (left out when there were none). */
  handoffs?: TurnHandoff[];
  /**
   * The decisions waiting in the turns below this one (its subagents', at any depth), each with the
   * workflow id of the turn that waits and its lineage; the root's lists the whole tree. Left out until
   * a child reports one.
   */
  waitsBelow?: WaitBelow[];
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
