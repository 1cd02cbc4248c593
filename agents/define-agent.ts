import { z } from 'zod';
import type { ApproverGroups } from '../common/approver-groups';
import type { ModelSettings } from '../common/contract/agent';
import type { AgentTurnInput, TurnLimits } from '../common/contract/turn';
import { LIMITS_ALLOWING_ZERO, TURN_LIMIT_NAMES } from '../common/defaults';
import type { ApprovalRule } from '../policies/approval-rules';
import { canonicalJson, sha256 } from '../tools/canonical-json';
import type { ToolDefinition } from '../tools/define-tool';
import { compileOutsideSchema } from '../tools/json-schema/outside-schema';

/** An agent's instructions computed from the turn's input; it runs in an activity once per turn and its result is recorded. */
export type InstructionsFunction = (input: AgentTurnInput) => string | Promise<string>;

/** What an agent adds to the worker's approvals: approver groups and rules (the shapes of config `approvals.groups` and `approvals.rules`). */
export interface AgentApprovals {
  /** Who may decide on which tool's calls of this agent, on top of the worker's groups: an approver must be allowed by both. */
  groups?: ApproverGroups;
  /** Rules matched before the worker's on this agent's irreversible calls; recorded as `rule:<agent>.<rule>`. */
  rules?: ApprovalRule[];
}

/** How many answers that do not fit the output schema are sent back to the model before the turn ends `output_invalid`. */
export const DEFAULT_OUTPUT_RETRIES = 2;

/** An agent as written in code: `defineAgent({ name, instructions, tools, output, … })`. */
export interface AgentSpec<Output extends z.ZodType | undefined = undefined> {
  /** How turns name the agent (`"agent": "support"`): lowercase letters, digits, `_` and `-`, starting with a letter. */
  name: string;
  description?: string;
  /** The system message the model receives, before Tollgate's rules on tool results; or a function of the turn's input. */
  instructions?: string | InstructionsFunction;
  /** A model of the config's `model.models` (or `createWorker({ models })`) used when the turn names none. */
  model?: string;
  modelSettings?: ModelSettings;
  /**
   * The agent's tools: definitions or names. The model is offered only these, and a call outside them is `forbidden`.
   * An agent among them (its definition, or `"agent:<name>"`) is a subagent: the model is offered a tool named after it.
   */
  tools?: Array<ToolDefinition | AgentDefinition<unknown> | string>;
  /** Agents this one may hand the turn to (definitions or names): the model is offered `transfer_to_<agent>` for each. */
  handoffs?: Array<AgentDefinition<unknown> | string>;
  /** The agent's limits, over the config's; a turn's own limits may only lower them. */
  limits?: TurnLimits;
  /** A zod schema the final answer must fit, as JSON: the turn's `output` is the parsed value. */
  output?: Output;
  /** Answers that do not fit `output` sent back with what was wrong, before the turn ends `output_invalid` (default 2). */
  outputRetries?: number;
  approvals?: AgentApprovals;
}

/** How an agent checks its final answer: the schema the model is told, and the check of a parsed value. */
export interface OutputCheck {
  jsonSchema: Record<string, unknown>;
  check(value: unknown): { valid: true; value: unknown } | { valid: false; problems: string[] };
}

/** A declared agent, as `createWorker({ agents })` and the config's `agents.<name>` give it; its digest covers everything it declares. */
export interface AgentDefinition<Output = unknown> {
  readonly name: string;
  readonly description?: string;
  readonly instructions?: string | InstructionsFunction;
  readonly model?: string;
  readonly modelSettings?: ModelSettings;
  /** Tool names; all registered tools when left out. */
  readonly tools?: string[];
  /** The names of the agents this one may hand the turn to (`transfer_to_<agent>`); none when left out. */
  readonly handoffs?: string[];
  /** The names of the agents this one may call as tools (subagents, each run as a child turn); none when left out. */
  readonly subagents?: string[];
  readonly limits?: TurnLimits;
  readonly output?: OutputCheck;
  readonly outputRetries: number;
  readonly approvals?: AgentApprovals;
  /** SHA-256 of the canonical definition (an instructions function by its source text). */
  readonly digest: string;
  /** The type of the parsed output, for `AgentOutput<typeof agent>` (no value at run time). */
  readonly outputType?: Output;
}

const AGENT_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/** How a tool list names an agent called as a tool (a subagent): `"agent:researcher"`. */
export const SUBAGENT_PREFIX = 'agent:';

/** Whether a value is an agent's definition (from defineAgent or the config), not a tool's. */
export function isAgentDefinition(value: unknown): value is AgentDefinition<unknown> {
  return !!value && typeof value === 'object' && typeof (value as AgentDefinition).digest === 'string' && 'outputRetries' in value;
}

/**
 * A tool list split into tool names and subagent names: agents (definitions or `agent:<name>`)
 * are subagents, everything else is left as it is for the checks that follow.
 */
export function splitSubagents(tools: readonly unknown[]): { tools: unknown[]; subagents: unknown[] } {
  const split = { tools: [] as unknown[], subagents: [] as unknown[] };
  for (const entry of tools) {
    if (isAgentDefinition(entry)) split.subagents.push(entry.name);
    else if (typeof entry === 'string' && entry.startsWith(SUBAGENT_PREFIX)) split.subagents.push(entry.slice(SUBAGENT_PREFIX.length));
    else split.tools.push(entry && typeof entry === 'object' && 'name' in entry ? entry.name : entry);
  }
  return split;
}

/** Checks the subagents: agent names, each once, never the agent itself. */
function checkSubagents(where: string, self: string, subagents: unknown): void {
  if (subagents === undefined) return;
  if (!Array.isArray(subagents)) fail(where, 'must be a list of agent names');
  const seen = new Set<string>();
  for (const subagent of subagents) {
    if (typeof subagent !== 'string' || !AGENT_NAME.test(subagent))
      fail(where, `holds ${JSON.stringify(subagent)}, not an agent (a definition, or "${SUBAGENT_PREFIX}<name>")`);
    if (subagent === self) fail(where, `names the agent itself (${self}); an agent cannot be its own subagent`);
    if (seen.has(subagent)) fail(where, `names agent ${subagent} twice`);
    seen.add(subagent);
  }
}

/** Throws, naming the agent and the field, when a definition is malformed. */
function fail(where: string, message: string): never {
  throw new Error(`${where}: ${message}`);
}

function checkNumber(where: string, value: unknown, { integer = false, min }: { integer?: boolean; min?: number } = {}): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value)) || (min !== undefined && value < min))
    fail(where, `must be a${integer ? ' whole' : ''} number${min !== undefined ? ` of at least ${min}` : ''}`);
}

/** Checks model settings field by field, so a typo or a wrong type names itself. */
export function checkModelSettings(where: string, settings: unknown): ModelSettings | undefined {
  if (settings === undefined) return undefined;
  if (!settings || typeof settings !== 'object' || Array.isArray(settings)) fail(where, 'must be an object');
  const known = [
    'temperature',
    'topP',
    'topK',
    'maxOutputTokens',
    'seed',
    'stopSequences',
    'presencePenalty',
    'frequencyPenalty',
    'providerOptions',
  ];
  const record = settings as Record<string, unknown>;
  for (const key of Object.keys(record)) if (!known.includes(key)) fail(`${where}.${key}`, `is not a model setting (${known.join(', ')})`);
  for (const key of ['temperature', 'topP', 'presencePenalty', 'frequencyPenalty']) checkNumber(`${where}.${key}`, record[key]);
  checkNumber(`${where}.topK`, record.topK, { integer: true, min: 1 });
  checkNumber(`${where}.maxOutputTokens`, record.maxOutputTokens, { integer: true, min: 1 });
  checkNumber(`${where}.seed`, record.seed, { integer: true });
  const stops = record.stopSequences;
  if (stops !== undefined && (!Array.isArray(stops) || stops.some((stop) => typeof stop !== 'string')))
    fail(`${where}.stopSequences`, 'must be a list of strings');
  const options = record.providerOptions;
  if (options !== undefined) {
    if (!options || typeof options !== 'object' || Array.isArray(options))
      fail(`${where}.providerOptions`, 'must be an object of provider namespaces');
    for (const [namespace, value] of Object.entries(options)) {
      if (!value || typeof value !== 'object' || Array.isArray(value)) fail(`${where}.providerOptions.${namespace}`, 'must be an object');
      if (namespace === 'tollgate') fail(`${where}.providerOptions.tollgate`, 'is Tollgate’s own namespace');
    }
  }
  return record as ModelSettings;
}

/** Checks approver groups as the config's `approvals.groups` are checked: tool names or patterns, each with approver key names. */
function checkGroups(where: string, groups: unknown): void {
  if (groups === undefined) return;
  if (!groups || typeof groups !== 'object' || Array.isArray(groups)) fail(where, 'must be an object of tool names and approver lists');
  for (const [tool, approvers] of Object.entries(groups)) {
    if (!/^[A-Za-z0-9_*-]{1,128}$/.test(tool)) fail(`${where}.${tool}`, 'expected a tool name or a pattern of one with *');
    if (
      !Array.isArray(approvers) ||
      approvers.some((approver) => typeof approver !== 'string' || !/^[A-Za-z0-9._@-]{1,64}$/.test(approver))
    )
      fail(`${where}.${tool}`, 'must be a list of approver key names');
  }
}

/** Checks the handoff targets: agent names, each once, never the agent itself. */
function checkHandoffs(where: string, self: string, handoffs: unknown): void {
  if (handoffs === undefined) return;
  if (!Array.isArray(handoffs)) fail(where, 'must be a list of agents or agent names');
  const seen = new Set<string>();
  for (const target of handoffs) {
    if (typeof target !== 'string' || !AGENT_NAME.test(target))
      fail(where, `holds ${JSON.stringify(target)}, not an agent or an agent name`);
    if (target === self) fail(where, `names the agent itself (${self})`);
    if (seen.has(target)) fail(where, `names ${target} twice`);
    seen.add(target);
  }
}

function checkLimits(where: string, limits: unknown): TurnLimits | undefined {
  if (limits === undefined) return undefined;
  if (!limits || typeof limits !== 'object' || Array.isArray(limits)) fail(where, 'must be an object');
  for (const [key, value] of Object.entries(limits)) {
    if (!TURN_LIMIT_NAMES.includes(key)) fail(`${where}.${key}`, `is not a limit (${TURN_LIMIT_NAMES.join(', ')})`);
    checkNumber(`${where}.${key}`, value, { integer: true, min: LIMITS_ALLOWING_ZERO.includes(key) ? 0 : 1 });
  }
  return limits as TurnLimits;
}

function problemsOf(issues: z.core.$ZodIssue[]): string[] {
  return issues.slice(0, 10).map((issue) => `${issue.path.length > 0 ? issue.path.map(String).join('.') : '(answer)'}: ${issue.message}`);
}

/** The check of an output given as a zod schema: the model is told its JSON Schema, a value is parsed by zod itself. */
function zodOutput(where: string, schema: z.ZodType): OutputCheck {
  if (!(schema instanceof z.ZodType)) fail(where, 'must be a zod schema (or a JSON Schema in the config)');
  let jsonSchema: Record<string, unknown>;
  try {
    jsonSchema = z.toJSONSchema(schema, { io: 'output' }) as Record<string, unknown>;
  } catch (error) {
    fail(where, `cannot be described as JSON Schema: ${(error as Error).message}`);
  }
  return {
    jsonSchema,
    check(value) {
      const parsed = schema.safeParse(value);
      return parsed.success ? { valid: true, value: parsed.data } : { valid: false, problems: problemsOf(parsed.error.issues) };
    },
  };
}

/** The check of an output given as a JSON Schema (the config's form), on the hardened validator. */
export function jsonSchemaOutput(where: string, schema: unknown): OutputCheck {
  let checked;
  try {
    checked = compileOutsideSchema(schema);
  } catch (error) {
    fail(where, (error as Error).message);
  }
  return {
    jsonSchema: schema as Record<string, unknown>,
    check(value) {
      const outcome = checked.check(value);
      if (outcome.valid) return { valid: true, value };
      return {
        valid: false,
        problems: outcome.problems.slice(0, 10).map((problem) => {
          const extra = problem.keyword === 'required' ? `/${String(problem.params.missingProperty)}` : '';
          const at = `${problem.instancePath}${extra}`.replace(/^\//, '').replace(/\//g, '.') || '(answer)';
          return `${at}: ${problem.message}`;
        }),
      };
    },
  };
}

/** What an agent declares, without its digest: the parts of a definition both forms (code and config) share. */
export type AgentParts = Omit<AgentDefinition, 'digest' | 'outputType' | 'outputRetries'> & { outputRetries?: number };

/** Checks an agent's parts and adds its digest; `where` names it in errors (`defineAgent(support)`, `agents.support`). */
export function completeAgent(where: string, parts: AgentParts): AgentDefinition {
  const { name, instructions, tools, outputRetries = DEFAULT_OUTPUT_RETRIES } = parts;
  if (typeof name !== 'string' || !AGENT_NAME.test(name))
    fail(where, `name ${JSON.stringify(name)} must start with a lowercase letter, then lowercase letters, digits, _ or - (at most 64)`);
  if (parts.description !== undefined && typeof parts.description !== 'string') fail(`${where}.description`, 'must be a string');
  if (instructions !== undefined && typeof instructions !== 'string' && typeof instructions !== 'function')
    fail(`${where}.instructions`, 'must be a string or a function of the turn input');
  if (parts.model !== undefined && (typeof parts.model !== 'string' || parts.model === '')) fail(`${where}.model`, 'must be a model name');
  if (tools !== undefined) {
    if (!Array.isArray(tools)) fail(`${where}.tools`, 'must be a list of tools or tool names');
    const seen = new Set<string>();
    for (const tool of tools) {
      if (typeof tool !== 'string' || tool === '') fail(`${where}.tools`, `holds ${JSON.stringify(tool)}, not a tool or a tool name`);
      if (seen.has(tool)) fail(`${where}.tools`, `names ${tool} twice`);
      seen.add(tool);
    }
  }
  checkHandoffs(`${where}.handoffs`, name, parts.handoffs);
  checkSubagents(`${where}.tools`, name, parts.subagents);
  checkModelSettings(`${where}.modelSettings`, parts.modelSettings);
  checkLimits(`${where}.limits`, parts.limits);
  checkNumber(`${where}.outputRetries`, outputRetries, { integer: true, min: 0 });
  if (parts.approvals !== undefined && (!parts.approvals || typeof parts.approvals !== 'object'))
    fail(`${where}.approvals`, 'must be an object { groups?, rules? }');
  checkGroups(`${where}.approvals.groups`, parts.approvals?.groups);
  const described = {
    name,
    description: parts.description ?? null,
    // A function is declared by its source: a worker whose function differs declares another agent.
    instructions: typeof instructions === 'function' ? { function: instructions.toString() } : (instructions ?? null),
    model: parts.model ?? null,
    modelSettings: parts.modelSettings ?? null,
    tools: tools ? [...tools].sort() : null,
    limits: parts.limits ?? null,
    output: parts.output?.jsonSchema ?? null,
    outputRetries,
    approvals: parts.approvals ?? null,
    // Only when declared, so the digests of agents without handoffs or subagents stay those they always were.
    ...(parts.handoffs ? { handoffs: [...parts.handoffs].sort() } : {}),
    ...(parts.subagents ? { subagents: [...parts.subagents].sort() } : {}),
  };
  return { ...parts, outputRetries, digest: sha256(canonicalJson(described)) };
}

/**
 * Declares an agent once: its instructions, model and settings, tools, limits, typed output and
 * approvals. Register it with `createWorker({ agents })`; a turn names it (`"agent": "support"`).
 */
export function defineAgent<Output extends z.ZodType | undefined = undefined>(
  spec: AgentSpec<Output>,
): AgentDefinition<Output extends z.ZodType ? z.output<Output> : unknown> {
  if (!spec || typeof spec !== 'object') throw new Error('defineAgent: expected an object { name, instructions, tools, … }');
  const where = `defineAgent(${typeof spec.name === 'string' ? spec.name : '?'})`;
  const split = spec.tools && Array.isArray(spec.tools) ? splitSubagents(spec.tools) : undefined;
  const tools = split ? split.tools : spec.tools;
  const subagents = split && split.subagents.length > 0 ? split.subagents : undefined;
  const output = spec.output === undefined ? undefined : zodOutput(`${where}.output`, spec.output);
  const handoffs = spec.handoffs?.map((agent) => (agent && typeof agent === 'object' && 'name' in agent ? agent.name : agent));
  return completeAgent(where, {
    name: spec.name,
    ...(spec.description !== undefined ? { description: spec.description } : {}),
    ...(spec.instructions !== undefined ? { instructions: spec.instructions } : {}),
    ...(spec.model !== undefined ? { model: spec.model } : {}),
    ...(spec.modelSettings !== undefined ? { modelSettings: spec.modelSettings } : {}),
    ...(tools !== undefined ? { tools: tools as string[] } : {}),
    ...(subagents !== undefined ? { subagents: subagents as string[] } : {}),
    ...(handoffs !== undefined ? { handoffs: handoffs as string[] } : {}),
    ...(spec.limits !== undefined ? { limits: spec.limits } : {}),
    ...(output ? { output } : {}),
    ...(spec.outputRetries !== undefined ? { outputRetries: spec.outputRetries } : {}),
    ...(spec.approvals !== undefined ? { approvals: spec.approvals } : {}),
  }) as AgentDefinition<Output extends z.ZodType ? z.output<Output> : unknown>;
}
