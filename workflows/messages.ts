import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ConversationState, TokenLedger } from '../common/contract/conversation';
import type {
  ApprovalDecision,
  DecisionReceipt,
  ResumeDecision,
  ResumeReceipt,
  ResolutionDecision,
  ResolutionReceipt,
  WaitsReport,
} from '../common/contract/decisions';
import type { AgentTurnResult, TurnState } from '../common/contract/turn';

/** Query `state`: status, step, pending approvals, decisions and the tool events so far. */
export const stateQuery = defineQuery<TurnState>('state');

/** Signal `approval`: a human decision on one pending call; an invalid one is recorded as rejected. */
export const approvalSignal = defineSignal<[ApprovalDecision]>('approval');

/** Update `decide`: the same decision, with a validator that rejects an invalid one to the caller at once. */
export const decideUpdate = defineUpdate<DecisionReceipt, [ApprovalDecision]>('decide');

/** Signal `resume`: a person's decision on a stream cut off after chunks went out; an invalid one is recorded as rejected. */
export const resumeSignal = defineSignal<[ResumeDecision]>('resume');

/** Update `resume`: the same decision, rejected to the caller at once when invalid. */
export const resumeUpdate = defineUpdate<ResumeReceipt, [ResumeDecision]>('resume');
/** Signal `resolve`: a person's word on a write whose outcome is unknown (applied or not); an invalid one is recorded as rejected. */
export const resolveSignal = defineSignal<[ResolutionDecision]>('resolve');

/** Update `resolve`: the same word, with a validator that rejects an invalid one to the caller at once. */
export const resolveUpdate = defineUpdate<ResolutionReceipt, [ResolutionDecision]>('resolve');

/**
 * Signal `waitsBelow`: a subagent's turn reports to its parent every decision waiting in it and below
 * it, on each change; the root's `state` lists them all (`waitsBelow`). Sent by turns, not by people.
 */
export const waitsBelowSignal = defineSignal<[WaitsReport]>('waitsBelow');

/** Update `send`: one user message of a conversation; answered with the result of the turn it ran. */
export const sendUpdate = defineUpdate<AgentTurnResult, [{ text: string }]>('send');

/** Query `history`: a conversation's messages and turn count. */
export const historyQuery = defineQuery<ConversationState>('history');

/** Signal `close`: the conversation takes no more messages and ends once its running turn is done. */
export const closeConversationSignal = defineSignal('close');

/**
 * Update `raiseTokenBudget`: a person raises a conversation's token budget to `maxTokens` (input and
 * output tokens of all its turns together); answered with the ledger. A budget that is not higher
 * than the one in force, or a conversation without a budget, is rejected.
 */
export const raiseTokenBudgetUpdate = defineUpdate<TokenLedger, [{ maxTokens: number }]>('raiseTokenBudget');
