export { agentTurn } from './agent-turn';
export { approvalSignal, decideUpdate, stateQuery } from './messages';
