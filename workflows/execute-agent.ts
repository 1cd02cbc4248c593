import { ApplicationFailure, executeChild, workflowInfo, type ChildWorkflowOptions } from '@temporalio/workflow';
import type { AgentTurnInput, AgentTurnResult } from '../common/contract/turn';
import { AGENT_TURN_WORKFLOW_TYPE } from '../common/defaults';
import { FAILURE_TYPE } from '../common/failures';
import type { agentTurn } from './agent-turn';

/** What an agent is asked from a workflow of your own: a turn's input, its agent named apart. */
export type ExecuteAgentInput = Omit<AgentTurnInput, 'agent'>;

/**
 * How the agent's turn starts as a child workflow. `key` tells two calls of one parent apart (default:
 * the agent's name and the task id); everything else goes to `executeChild` as it is (`taskQueue`:
 * by default the parent's, whose worker must then serve Tollgate, as `TollgatePlugin` does).
 */
export interface ExecuteAgentOptions extends Omit<ChildWorkflowOptions, 'args' | 'workflowId'> {
  key?: string;
}

/** The longest key taken: the child's workflow id is the parent's id, `-agent-` and the key. */
const MAX_KEY_LENGTH = 200;

/**
 * Runs an agent's turn as a child workflow of the calling workflow and returns its result, `output`
 * typed as `Output` (`executeAgent<AgentOutput<typeof support>>('support', …)`, the agent imported
 * with `import type` only). The child's workflow id is derived from the parent's and the key, so a
 * start tried again finds the one child rather than running the agent twice; its approvals wait in
 * the inbox like those of any turn (the turn sets its search attributes itself).
 */
export async function executeAgent<Output = unknown>(
  agent: string | undefined,
  input: ExecuteAgentInput,
  options: ExecuteAgentOptions = {},
): Promise<AgentTurnResult<Output>> {
  const { key = `${agent ?? 'default'}-${input?.taskId}`, ...childOptions } = options;
  if (agent !== undefined && (typeof agent !== 'string' || agent.trim() === '')) {
    throw refused(
      `executeAgent: the agent must be a name (a non-empty string) or undefined for the default agent, got ${JSON.stringify(agent)}`,
    );
  }
  if (typeof input?.taskId !== 'string' || input.taskId.trim() === '') {
    throw refused('executeAgent: input.taskId must be a non-empty string (it names the business task; idempotency keys derive from it)');
  }
  if (typeof key !== 'string' || key === '' || key.length > MAX_KEY_LENGTH) {
    throw refused(
      `executeAgent: options.key must be a string of 1 to ${MAX_KEY_LENGTH} characters, got ${JSON.stringify(key)?.slice(0, 80)}`,
    );
  }
  const result = await executeChild<typeof agentTurn>(AGENT_TURN_WORKFLOW_TYPE, {
    ...childOptions,
    workflowId: `${workflowInfo().workflowId}-agent-${key}`,
    args: [{ ...input, ...(agent === undefined ? {} : { agent }) }],
  });
  return result as AgentTurnResult<Output>;
}

/** A call the parent's own code got wrong: it fails the parent's workflow with `invalid_input`, rather than retrying its task forever. */
function refused(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FAILURE_TYPE.invalid_input, message, nonRetryable: true });
}
