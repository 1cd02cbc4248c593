export { agentTurn } from './agent-turn';
export { stateQuery } from './messages';
