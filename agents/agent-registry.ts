import { compileRules, type CompiledRule } from '../policies/approval-rules';
import type { AgentDefinition } from './define-agent';
import { handoffToolName } from '../common/handoff-names';

/** The agents one worker serves, checked against its tools and models once, at worker start. */
export interface AgentRegistry {
  get(name: string): AgentDefinition | undefined;
  /** The names of the agents served, for errors that list them. */
  names(): string[];
  /** The agent's approval rules, compiled, named `<agent>.<rule>`; none when it has none. */
  rules(name: string): CompiledRule[];
}

/**
 * Builds the registry from the agents given in code and the config's: a name declared twice, a
 * tool or a model the worker does not serve, or a rule that does not compile stops the worker
 * here, naming the agent.
 */
export function createAgentRegistry({
  agents,
  toolNames,
  modelNames,
}: {
  agents: AgentDefinition[];
  /** The tools the worker serves. */
  toolNames: string[];
  /** The models a turn may name (left out: not checked). */
  modelNames?: string[];
}): AgentRegistry {
  const byName = new Map<string, AgentDefinition>();
  const rules = new Map<string, CompiledRule[]>();
  for (const agent of agents) {
    if (!agent || typeof agent !== 'object' || typeof agent.digest !== 'string')
      throw new Error('agents: each agent comes from defineAgent (or the config’s agents section)');
    if (byName.has(agent.name)) throw new Error(`agent "${agent.name}" is declared twice; agent names must be unique on a worker`);
    for (const tool of agent.tools ?? []) {
      if (!toolNames.includes(tool))
        throw new Error(`agent ${agent.name}: tool "${tool}" is not served by this worker (served: ${toolNames.join(', ')})`);
    }
    if (agent.model !== undefined && modelNames && !modelNames.includes(agent.model))
      throw new Error(`agent ${agent.name}: model "${agent.model}" is not one of the worker's models (${modelNames.join(', ')})`);
    const compiled = compileRules(agent.approvals?.rules ?? [], `agents.${agent.name}.approvals.rules`);
    rules.set(
      agent.name,
      compiled.map((rule) => ({ ...rule, name: `${agent.name}.${rule.name}` })),
    );
    byName.set(agent.name, agent);
  }
  checkHandoffTargets(byName, toolNames);
  checkSubagents(byName, toolNames);
  return {
    get: (name) => byName.get(name),
    names: () => [...byName.keys()],
    rules: (name) => rules.get(name) ?? [],
  };
}

/**
 * Each agent's handoff targets are agents of this worker, and no handoff tool (`transfer_to_<agent>`)
 * shares its name with a tool the worker serves: the model would be offered two tools of one name.
 */
function checkHandoffTargets(byName: Map<string, AgentDefinition>, toolNames: string[]): void {
  for (const agent of byName.values()) {
    for (const target of agent.handoffs ?? []) {
      if (!byName.has(target))
        throw new Error(
          `agent ${agent.name}: handoff target "${target}" is not an agent of this worker (agents: ${[...byName.keys()].join(', ')})`,
        );
      const tool = handoffToolName(target);
      if (toolNames.includes(tool))
        throw new Error(
          `agent ${agent.name}: its handoff to ${target} is offered as "${tool}", which is also the name of a tool the worker serves`,
        );
    }
  }
}

/**
 * Each agent's subagents are agents of this worker, and none shares its name with a tool the worker
 * serves: the model is offered a subagent as a tool of the agent's name, so two tools would share one.
 */
function checkSubagents(byName: Map<string, AgentDefinition>, toolNames: string[]): void {
  for (const agent of byName.values()) {
    for (const subagent of agent.subagents ?? []) {
      if (!byName.has(subagent))
        throw new Error(
          `agent ${agent.name}: subagent "${subagent}" is not an agent of this worker (agents: ${[...byName.keys()].join(', ')})`,
        );
      if (toolNames.includes(subagent))
        throw new Error(
          `agent ${agent.name}: its subagent ${subagent} is offered to the model as the tool "${subagent}", which is also the name of a tool the worker serves`,
        );
    }
  }
}
