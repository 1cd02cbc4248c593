import { setWorkflowOptions } from '@temporalio/workflow';
import { agentTurn } from './agent-turn';
import { conversation } from './conversation';
import { toolCatalogue } from './tool-catalogue';

// A turn finishes on the build that started it: a person's approval, given hours later, is taken by
// the code (and the tool policies) the turn was shown under. A conversation is pinned too and moves
// to a newer build only where it continues as new.
setWorkflowOptions({ versioningBehavior: 'PINNED' }, agentTurn);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, conversation);
// The catalogue asks the build that takes new work now: the tools the next call would run under.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, toolCatalogue);

export { agentTurn, conversation, toolCatalogue };
export { approvalSignal, closeConversationSignal, decideUpdate, historyQuery, sendUpdate, stateQuery } from './messages';
