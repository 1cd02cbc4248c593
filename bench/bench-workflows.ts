// The workflows a benchmark worker serves: Tollgate's and the bare floor, side by side.
export { agentTurn } from '../workflows';
export { bareAgentLoop, bareApprovedSends, bareCalls, bareNothing, bareOne, bareTurn } from './bare-workflows';
