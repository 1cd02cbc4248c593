// The workflows a benchmark worker serves: Tollgate's and the bare floor, side by side.
export { agentTurn } from '../workflows';
export {
  bareAgentLoop,
  bareAgentPlan,
  bareApprovedSends,
  bareCalls,
  bareDelegate,
  bareNothing,
  bareOne,
  bareReaderChild,
  bareTurn,
} from './bare-workflows';
