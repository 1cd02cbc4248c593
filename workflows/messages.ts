import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalDecision, DecisionReceipt, TurnState } from '../common/types';

/** Query `state`: status, step, pending approvals, decisions and the tool events so far. */
export const stateQuery = defineQuery<TurnState>('state');

/** Signal `approval`: a human decision on one pending call; an invalid one is recorded as rejected. */
export const approvalSignal = defineSignal<[ApprovalDecision]>('approval');

/** Update `decide`: the same decision, with a validator that rejects an invalid one to the caller at once. */
export const decideUpdate = defineUpdate<DecisionReceipt, [ApprovalDecision]>('decide');
