import { z } from 'zod';
import { DEFAULT_TURN_LIMITS, LIMITS_ALLOWING_ZERO } from '../common/defaults';
import { approvalRulesSchema } from '../policies/approval-rules';
import { compileOutsideSchema } from '../tools/json-schema/outside-schema';
import { completeAgent, jsonSchemaOutput, splitSubagents, type AgentDefinition } from './define-agent';

// The config's `agents` section: agents declared in temporal.config.yaml, with the fields of
// `defineAgent` (instructions a string, tools by name, output a JSON Schema).

const wholeAtLeast = (min: number) => z.number().int().min(min);

/** Model settings as the config writes them. */
const modelSettingsSchema = z.strictObject({
  temperature: z.number().optional(),
  topP: z.number().optional(),
  topK: wholeAtLeast(1).optional(),
  maxOutputTokens: wholeAtLeast(1).optional(),
  seed: z.number().int().optional(),
  stopSequences: z.array(z.string()).optional(),
  presencePenalty: z.number().optional(),
  frequencyPenalty: z.number().optional(),
  providerOptions: z
    .record(
      z.string().refine((namespace) => namespace !== 'tollgate', 'tollgate is Tollgate’s own namespace'),
      z.record(z.string(), z.unknown()),
    )
    .optional(),
});

/** An agent's limits as the config writes them: any of the turn limits, as whole numbers. */
const agentLimitsSchema = z.strictObject(
  Object.fromEntries(
    [...Object.keys(DEFAULT_TURN_LIMITS), 'maxTokens'].map((key) => [
      key,
      wholeAtLeast(LIMITS_ALLOWING_ZERO.includes(key) ? 0 : 1).optional(),
    ]),
  ),
);

/** One agent of the `agents` section. */
export const agentConfigSchema = z.strictObject({
  description: z.string().optional(),
  /** The system message the model receives (Tollgate's rules on tool results follow it). */
  instructions: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  modelSettings: modelSettingsSchema.optional(),
  /** Tool names, and subagents as `agent:<name>`; all registered tools when left out. */
  tools: z.array(z.string().min(1)).optional(),
  /** Agents this one may hand the turn to, by name (the model is offered `transfer_to_<agent>`). */
  handoffs: z.array(z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'expected an agent name')).optional(),
  limits: agentLimitsSchema.optional(),
  /** A JSON Schema the final answer must fit; it is compiled when the config is read. */
  output: z
    .record(z.string(), z.unknown())
    .superRefine((schema, context) => {
      try {
        compileOutsideSchema(schema);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
      }
    })
    .optional(),
  outputRetries: wholeAtLeast(0).optional(),
  approvals: z
    .strictObject({
      groups: z
        .record(
          z.string().regex(/^[A-Za-z0-9_*-]{1,128}$/, 'expected a tool name or a pattern of one with *'),
          z.array(z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'expected an approver key name')),
        )
        .optional(),
      rules: approvalRulesSchema.optional(),
    })
    .optional(),
});

/** The `agents` section: agents by name. */
export const agentsSchema = z.record(
  z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'an agent name starts with a lowercase letter, then lowercase letters, digits, _ or -'),
  agentConfigSchema,
);

/** The agents of the config's `agents` section, as definitions (their errors name `agents.<name>`). */
export function agentsFromConfig(section: z.output<typeof agentsSchema> | undefined): AgentDefinition[] {
  return Object.entries(section ?? {}).map(([name, agent]) => {
    const where = `agents.${name}`;
    const { output, tools, ...rest } = agent;
    // `agent:<name>` entries of the tool list are subagents; the rest stay tool names.
    const split = tools ? splitSubagents(tools) : undefined;
    return completeAgent(where, {
      name,
      ...Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined)),
      ...(split ? { tools: split.tools as string[] } : {}),
      ...(split && split.subagents.length > 0 ? { subagents: split.subagents as string[] } : {}),
      ...(output ? { output: jsonSchemaOutput(`${where}.output`, output) } : {}),
    });
  });
}
