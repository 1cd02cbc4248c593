export { agentTurn } from './agent-turn';
export { conversation } from './conversation';
export { approvalSignal, closeConversationSignal, decideUpdate, historyQuery, sendUpdate, stateQuery } from './messages';
