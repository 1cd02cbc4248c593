import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { ApplicationFailure } from '@temporalio/activity';
import type { ModelStepInput, ModelStepResult } from '../../common/activity-types';
import { FAILURE_TYPE } from '../../common/failures';
import { narrowTools } from '../../common/contract/agent';
import type { AgentRegistry } from '../../agents/agent-registry';
import type { AgentDefinition } from '../../agents/define-agent';
import { SYSTEM_MESSAGE, TOOL_RESULT_RULES } from './model-prompt';
import { mismatchMessage } from './agent-instructions';

/** What a model step runs under for its turn's agent: the system message, the call options, the tools and the answer's check. */
export interface AgentStep {
  /** The agent as this worker declares it. */
  definition: AgentDefinition;
  system: string;
  /** Call options the agent's model settings and output schema set (merged over the step's own). */
  callOptions: Partial<LanguageModelV4CallOptions>;
  /** The tools the step may offer and accept: the turn's list narrowed to the agent's. */
  allowedTools?: string[];
  /** The final answer's check, for an agent with an output schema. */
  checkAnswer?: (text: string | undefined) => NonNullable<ModelStepResult['output']>;
}

/**
 * The step's agent as this worker declares it; a worker that declares none by that name, or another
 * definition (the digest differs), refuses the step: it would run the model under other instructions,
 * tools or schema than the turn recorded.
 */
export function agentStep(agents: AgentRegistry | undefined, input: Pick<ModelStepInput, 'agent' | 'allowedTools'>): AgentStep | undefined {
  const reference = input.agent;
  if (!reference) return undefined;
  const declared = agents?.get(reference.name);
  if (!declared || declared.digest !== reference.digest) {
    throw ApplicationFailure.create({
      type: FAILURE_TYPE.agent_mismatch,
      message: mismatchMessage(reference, declared?.digest),
      nonRetryable: true,
    });
  }
  const instructions = typeof declared.instructions === 'function' ? reference.instructions : declared.instructions;
  return {
    definition: declared,
    system: systemMessage(declared, instructions),
    callOptions: callOptions(declared),
    allowedTools: narrowTools(input.allowedTools, declared.tools),
    ...(declared.output ? { checkAnswer: (text: string | undefined) => checkAnswer(declared, text) } : {}),
  };
}

/** The agent's instructions, then Tollgate's rules on tool results, then (with an output schema) what the final answer must be. */
function systemMessage(agent: AgentDefinition, instructions: string | undefined): string {
  const parts = [instructions === undefined ? SYSTEM_MESSAGE : `${instructions.trim()}\n\n${TOOL_RESULT_RULES}`];
  if (agent.output) {
    parts.push(
      'Your final answer (a reply with no tool call) is one JSON value, with nothing before or after it, that fits this JSON Schema:\n' +
        JSON.stringify(agent.output.jsonSchema),
    );
  }
  return parts.join('\n\n');
}

function callOptions(agent: AgentDefinition): Partial<LanguageModelV4CallOptions> {
  const settings = agent.modelSettings ?? {};
  const options: Partial<LanguageModelV4CallOptions> = {};
  for (const key of ['temperature', 'topP', 'topK', 'maxOutputTokens', 'seed', 'presencePenalty', 'frequencyPenalty'] as const) {
    if (settings[key] !== undefined) options[key] = settings[key];
  }
  if (settings.stopSequences) options.stopSequences = [...settings.stopSequences];
  if (settings.providerOptions) options.providerOptions = settings.providerOptions as LanguageModelV4CallOptions['providerOptions'];
  // Providers that take a JSON response format are told the schema too; the answer is checked here whatever they do with it.
  if (agent.output)
    options.responseFormat = { type: 'json', schema: agent.output.jsonSchema as never, name: `${agent.name.replace(/-/g, '_')}_output` };
  return options;
}

/** The text of a final answer as JSON: as it is, or the one fenced block it consists of. */
function answerJson(text: string): unknown {
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/.exec(trimmed);
  return JSON.parse(fenced ? fenced[1] : trimmed);
}

/** The final answer parsed and checked against the agent's output schema, or what does not fit, one line each. */
export function checkAnswer(agent: AgentDefinition, text: string | undefined): NonNullable<ModelStepResult['output']> {
  if (!agent.output) return { valid: true, value: text };
  if (text === undefined || text.trim() === '') return { valid: false, problems: 'the answer is empty; it must be one JSON value' };
  let value: unknown;
  try {
    value = answerJson(text);
  } catch (error) {
    return { valid: false, problems: `the answer is not JSON: ${(error as Error).message}` };
  }
  const checked = agent.output.check(value);
  return checked.valid ? { valid: true, value: checked.value } : { valid: false, problems: checked.problems.join('\n') };
}
