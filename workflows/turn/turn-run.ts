import type { TurnStatus } from '../../common/codes';
import type { StepMessage, TranscriptReference } from '../../common/kept-results';
import type { ToolEvent } from '../../common/contract/tools';
import type { AgentTurnInput, AgentTurnResult, TurnHandoff, TurnState, Usage } from '../../common/contract/turn';
import type { TurnDecisions } from '../decisions/turn-decisions';
import type { TurnTelemetry } from '../turn-telemetry';
import type { TurnRunSettings } from './settings';
import type { AgentReference } from '../../common/contract/agent';
import type { DelegatedUsage } from '../delegation/child-limits';

/** What the phases of one turn share: its input and settings, its state and decisions, the messages so far, and how it ends. */
export interface TurnRun {
  input: AgentTurnInput;
  settings: TurnRunSettings;
  state: TurnState;
  /** The record of every call, the same list as `state.toolCalls`. */
  events: ToolEvent[];
  usage: Usage;
  decisions: TurnDecisions;
  telemetry: TurnTelemetry;
  /** The messages the next model step is sent: large tool results by reference to the content their call kept. */
  messages: StepMessage[];
  /** The transcript the last model step kept: the first messages, which the next step is not sent again. */
  transcript?: TranscriptReference;
  /** The turn's token budget, when it has one. */
  budget?: number;
  /** The last model step's input tokens (the next step's prompt holds that one's). */
  lastInputTokens: number;
  /** Tool calls that failed and fresh steps after a broken stream, against `limits.errorBudget`. */
  errors: number;
  startedAt: number;
  /** Set once the turn ends: why, with what it ends with. */
  status?: TurnStatus;
  error?: AgentTurnResult['error'];
  partialText?: string;
  answer?: string;
  /** The tools the turn may call: its own list narrowed to its agent's (all registered tools when neither names any). */
  allowedTools?: string[];
  /** The turn's agent, as its model steps name it; `instructions` is what its instructions function returned. */
  agent?: AgentReference & { instructions?: string };
  /** Final answers sent back to the model because they did not fit the agent's output schema. */
  outputRetries: number;
  /** The agent's typed answer, once one fitted its output schema. */
  output?: unknown;
  /** What the turn's subagents (child turns) used, counted against its limits; set on its first delegate call. */
  delegated?: DelegatedUsage;
  /** The handoff this step's calls accepted: the turn goes to that agent once they are done (`handoff.ts`). */
  handoff?: TurnHandoff;
}

/** The state of a turn at its start: running its first model step, nothing waiting, decided or called yet. */
export function startingState(taskId: string): TurnState {
  return {
    taskId,
    status: 'running',
    phase: 'model',
    step: 0,
    pendingApprovals: [],
    decisions: [],
    rejectedDecisions: [],
    rejectedDecisionsDropped: 0,
    toolCalls: [],
    modelInterruptions: [],
    // The live view reads the usage so far from the state, against the budget when there is one.
    usage: { inputTokens: 0, outputTokens: 0 },
  };
}
