import { setWorkflowOptions } from '@temporalio/workflow';
import { agentTurn } from './agent-turn';
import { conversation } from './conversation';

// A turn finishes on the build that started it: a person's approval, given hours later, is taken by
// the code (and the tool policies) the turn was shown under. A conversation is pinned too and moves
// to a newer build only where it continues as new.
setWorkflowOptions({ versioningBehavior: 'PINNED' }, agentTurn);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, conversation);

export { agentTurn, conversation };
export { approvalSignal, closeConversationSignal, decideUpdate, historyQuery, sendUpdate, stateQuery } from './messages';
