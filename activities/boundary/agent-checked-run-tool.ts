import type { BoundaryResult, RunToolInput } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { AgentRegistry } from '../../agents/agent-registry';

/**
 * `runTool` behind the check of the turn's agent: a call of an agent this worker declares
 * differently (its digest differs) or not at all, or of a tool outside the agent's tools, is
 * refused `forbidden` and its handler never runs, as a differently declared tool is.
 */
export function agentCheckedRunTool(
  runTool: (input: RunToolInput) => Promise<BoundaryResult>,
  agents: AgentRegistry,
): (input: RunToolInput) => Promise<BoundaryResult> {
  return async (input) => {
    const reference = input.agent;
    if (!reference) return runTool(input);
    const declared = agents.get(reference.name);
    if (!declared) {
      return BoundaryResults.refused('forbidden', `${input.tool} is not run: agent ${reference.name} is not declared on this worker`);
    }
    if (declared.digest !== reference.digest) {
      const message =
        `${input.tool} is not run: this worker declares agent ${reference.name} differently ` +
        `(digest ${declared.digest.slice(0, 12)}, the turn started with ${reference.digest.slice(0, 12)})`;
      return BoundaryResults.refused('forbidden', message);
    }
    if (declared.tools && !declared.tools.includes(input.tool)) {
      return BoundaryResults.refused(
        'forbidden',
        `agent ${reference.name} may not call ${input.tool} (its tools: ${declared.tools.join(', ')})`,
      );
    }
    return runTool(input);
  };
}
