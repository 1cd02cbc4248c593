import type { ToolCallRequest, ToolResult } from './tools';
import type { ModelSelection, TurnLimits, Usage } from './turn';

/** One message of a turn's conversation with the model. */
export type TurnMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; text?: string; toolCalls: ToolCallRequest[] }
  | { role: 'tool'; callId: string; tool: string; result: ToolResult };

/** The input of the `conversation` workflow: plain JSON like a turn's. */
export interface ConversationInput {
  conversationId: string;
  model?: ModelSelection;
  tools?: string[];
  limits?: TurnLimits;
  /** The agent every turn of the conversation runs as (`AgentTurnInput.agent`); the default agent when left out. */
  agent?: string;
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
