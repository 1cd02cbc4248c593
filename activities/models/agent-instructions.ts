import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE_TYPE } from '../../common/failures';
import type { AgentInstructionsInput } from '../../common/activity-types';
import type { AgentRegistry } from '../../agents/agent-registry';

/** The most characters an instructions function may return: its text is recorded in the turn's history. */
export const MAX_INSTRUCTIONS_CHARS = 100_000;

/**
 * The `agentInstructions` activity: runs an agent's instructions function on the turn's input, once
 * per turn (its result is recorded in the history, so a replay never runs it again). A worker that
 * declares the agent differently refuses, as it refuses the agent's model steps.
 */
export function createAgentInstructions(agents: AgentRegistry) {
  return async function agentInstructions({ agent, input }: AgentInstructionsInput): Promise<string> {
    const declared = agents.get(agent.name);
    if (!declared || declared.digest !== agent.digest) {
      throw ApplicationFailure.create({
        type: FAILURE_TYPE.agent_mismatch,
        message: mismatchMessage(agent, declared?.digest),
        nonRetryable: true,
      });
    }
    if (typeof declared.instructions !== 'function') return declared.instructions ?? '';
    const text = await declared.instructions(input);
    if (typeof text !== 'string' || text.trim() === '') {
      throw ApplicationFailure.create({
        type: FAILURE_TYPE.model_error,
        message: `agent ${agent.name}: its instructions function returned ${typeof text === 'string' ? 'an empty string' : typeof text}, not the instructions`,
        nonRetryable: true,
      });
    }
    if (text.length > MAX_INSTRUCTIONS_CHARS) {
      throw ApplicationFailure.create({
        type: FAILURE_TYPE.model_error,
        message: `agent ${agent.name}: its instructions function returned ${text.length} characters; at most ${MAX_INSTRUCTIONS_CHARS} are taken`,
        nonRetryable: true,
      });
    }
    return text;
  };
}

/** Why a worker refuses an agent's step: it declares no such agent, or another definition of it. */
export function mismatchMessage(agent: { name: string; digest: string }, declared: string | undefined): string {
  return declared === undefined
    ? `agent ${agent.name} is not declared on this worker; the step is not run`
    : `this worker declares agent ${agent.name} differently (digest ${declared.slice(0, 12)}, the turn started with ${agent.digest.slice(0, 12)}); the step is not run`;
}
