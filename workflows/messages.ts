import { defineQuery } from '@temporalio/workflow';
import type { TurnState } from '../common/types';

/** Query `state`: status, step, pending approvals and the tool events so far. */
export const stateQuery = defineQuery<TurnState>('state');
