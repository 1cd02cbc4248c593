import type { Ajv } from 'ajv';
import { z } from 'zod';
import { toolMatches } from '../common/approver-groups';
import { toMilliseconds } from '../common/duration';
import { ConfigError } from '../config/config-error';
import { positiveDuration } from '../config/schema-parts';
import { addWorkKeyword, checkWithinBudget, prepareBoundedSchema, SchemaBudgetError } from '../hardened/bounded-schema';
import { LINEAR_REGEX_AJV_OPTIONS, UnsupportedRegexError, withRegexBudget } from '../hardened/linear-regex';

// Approval rules (config `approvals.rules`, or `createWorker({ approvalRules })`): an ordered list,
// first match wins, each naming a tool (or a pattern of tool names), a JSON Schema condition on the
// arguments and a decision. Conditions compile on ajv with the linear-time regex engine; a rule that
// does not compile stops the worker with an error naming the rule and the field.

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** A cap on what one rule approves: calls per task, calls per time window, a total of one numeric argument. */
const limitsSchema = z.strictObject({
  /** At most this many calls approved by the rule in one task. */
  perTask: z.number().int().min(1).optional(),
  /** At most `calls` calls approved by the rule, over all tasks, in any `window`. */
  perWindow: z.strictObject({ calls: z.number().int().min(1), window: positiveDuration }).optional(),
  /** A total over one numeric argument (such as cents) the rule approves, per task and per window. */
  amount: z
    .strictObject({
      /** The argument: a top-level name, or a JSON Pointer (`/payment/cents`). */
      argument: z.string().min(1).max(200),
      perTask: z.number().positive().optional(),
      perWindow: z.strictObject({ max: z.number().positive(), window: positiveDuration }).optional(),
    })
    .refine((amount) => amount.perTask !== undefined || amount.perWindow !== undefined, 'an amount cap needs perTask or perWindow')
    .optional(),
});

/** One rule as written in the config. */
export const approvalRuleSchema = z
  .strictObject({
    /** Recorded as `rule:<name>` on every call it decides. */
    name: z.string().regex(NAME, 'expected a rule name: letters, digits, _ . - (at most 64)'),
    /** A tool name, or a pattern with `*` (`files__*` covers an MCP server's tools). */
    tool: z.string().regex(/^[A-Za-z0-9_*-]{1,128}$/, 'expected a tool name or a pattern of one with *'),
    /** A JSON Schema the arguments must match; every call of the tool matches when left out. */
    when: z.record(z.string(), z.unknown()).optional(),
    decision: z.enum(['approve', 'deny', 'ask']),
    /** With `deny`: what the model is told. */
    reason: z.string().min(1).max(500).optional(),
    /** With `approve`: past a cap, the call is asked for like any other. */
    limits: limitsSchema.optional(),
  })
  .superRefine((rule, context) => {
    if (rule.decision === 'deny' && rule.reason === undefined)
      context.addIssue({ code: 'custom', path: ['reason'], message: 'a deny rule needs the reason the model is given' });
    if (rule.decision !== 'approve' && rule.limits !== undefined)
      context.addIssue({ code: 'custom', path: ['limits'], message: 'only an approve rule has limits' });
  });

/** The ordered rules; their names are unique. */
export const approvalRulesSchema = z.array(approvalRuleSchema).superRefine((rules, context) => {
  const seen = new Set<string>();
  for (const [index, rule] of rules.entries()) {
    if (seen.has(rule.name)) context.addIssue({ code: 'custom', path: [index, 'name'], message: `a second rule named ${rule.name}` });
    seen.add(rule.name);
  }
});

export type ApprovalRule = z.input<typeof approvalRuleSchema>;
type ParsedRule = z.output<typeof approvalRuleSchema>;

/** A rule's caps in milliseconds, as the store counts them. */
export interface RuleLimits {
  perTask?: number;
  perWindow?: { calls: number; windowMs: number };
  amountPerTask?: number;
  amountPerWindow?: { max: number; windowMs: number };
}

/** A rule ready to match: its condition compiled. */
export interface CompiledRule {
  name: string;
  tool: string;
  decision: 'approve' | 'deny' | 'ask';
  reason?: string;
  limits?: RuleLimits;
  /** The JSON Pointer of the argument an amount cap sums. */
  amountPointer?: string;
  /** Whether the tool and the arguments match (false when the condition cannot be evaluated). */
  matches(tool: string, args: unknown): boolean;
  /** Whether the tool and the arguments match, or why the condition cannot be evaluated for them (a person is asked then). */
  evaluate(tool: string, args: unknown): ConditionOutcome;
}

/** A condition's verdict on some arguments: they match, they do not, or it cannot be evaluated within its work budget (and why). */
export type ConditionOutcome = { matches: boolean } | { unevaluable: string };

/** A compiled condition: its verdict on some arguments, never a throw. */
export type Condition = (args: unknown) => ConditionOutcome;

/** Keywords that constrain only values of one type, and so pass a value of any other type vacuously. */
const TYPED_KEYWORDS: Array<[string, string[]]> = [
  ['string', ['pattern', 'format', 'minLength', 'maxLength']],
  ['number', ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']],
  ['object', ['properties', 'required', 'additionalProperties', 'patternProperties', 'minProperties', 'maxProperties']],
  ['array', ['items', 'prefixItems', 'minItems', 'maxItems', 'uniqueItems', 'contains']],
];

/**
 * A condition that approves, read strictly: a subschema with keywords of one type and no `type`
 * matches only values of that type (a `pattern` never passes an object), and an object's properties
 * the condition does not name fail it unless it says otherwise (`additionalProperties`). Only what
 * the rule looked at is approved; anything else is asked for. `not` and `if` are left as written.
 */
export function strictCondition(schema: unknown): unknown {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const source = schema as Record<string, unknown>;
  const strict: Record<string, unknown> = { ...source };
  if (strict.type === undefined && strict.const === undefined && strict.enum === undefined) {
    const types = TYPED_KEYWORDS.filter(([, keywords]) => keywords.some((keyword) => keyword in source)).map(([type]) => type);
    if (types.length === 1) strict.type = types[0];
  }
  const isObject = strict.type === 'object' || (Array.isArray(strict.type) && strict.type.includes('object'));
  if (isObject && strict.properties !== undefined && strict.additionalProperties === undefined && strict.patternProperties === undefined) {
    strict.additionalProperties = false;
  }
  const each = (value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, strictCondition(item)]))
      : value;
  for (const key of ['properties', 'patternProperties', '$defs', 'definitions']) if (key in strict) strict[key] = each(strict[key]);
  for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems'])
    if (Array.isArray(strict[key])) strict[key] = (strict[key] as unknown[]).map(strictCondition);
  if (strict.items !== undefined)
    strict.items = Array.isArray(strict.items) ? strict.items.map(strictCondition) : strictCondition(strict.items);
  if (typeof strict.additionalProperties === 'object') strict.additionalProperties = strictCondition(strict.additionalProperties);
  return strict;
}

let conditionAjv: Ajv | undefined;

/** One validator for every condition: strict about keywords (a typo is an error), patterns on the linear-time engine. */
function ajv(): Ajv {
  // ajv is loaded when a condition is first compiled (a worker with rules, a grant), not by every reader of the config.
  if (!conditionAjv) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    conditionAjv = new (require('ajv') as typeof import('ajv')).Ajv({
      allErrors: false,
      strict: true,
      strictTypes: false,
      strictTuples: false,
      ...LINEAR_REGEX_AJV_OPTIONS,
    });
    addWorkKeyword(conditionAjv);
  }
  return conditionAjv;
}

/**
 * Compiles one condition within the schema work budget (`prepareBoundedSchema`), or throws a
 * ConfigError that names `where` and the field or the bound it would pass. The condition it
 * returns says, for arguments it cannot evaluate within the budget, why instead of a verdict.
 */
export function compileCondition(schema: unknown, where: string, approves: boolean): Condition {
  let prepared;
  try {
    // Measured as written first: what the strict reading walks is then known to be small and shallow.
    prepared = prepareBoundedSchema(schema);
    if (approves) prepared = prepareBoundedSchema(strictCondition(schema));
  } catch (error) {
    if (SchemaBudgetError.isInstance(error)) throw new ConfigError(`${where}: the condition is over its work budget: ${error.message}`);
    throw new ConfigError(`${where}: ${(error as Error).message}`);
  }
  const { budget } = prepared;
  try {
    const validate = ajv().compile(prepared.schema);
    return (args) => {
      const outcome = checkWithinBudget(args, budget, () => withRegexBudget(() => validate(args) === true));
      if (!outcome.ran) return { unevaluable: outcome.why };
      // A pattern skipped for its cost decided nothing (inside a `not` it would even pass): the verdict is not known.
      if (outcome.value.exhausted) return { unevaluable: 'a pattern of it could not be matched within the matching budget' };
      return { matches: outcome.value.value };
    };
  } catch (error) {
    if (UnsupportedRegexError.isInstance(error)) throw new ConfigError(`${where}: ${error.message}`);
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    // ajv names the schema path of what is wrong (`data/properties/to/type must be …`, `unknown keyword: "propertes"`).
    throw new ConfigError(`${where}: not a JSON Schema ajv accepts: ${message.replace(/^schema is invalid: /, '')}`);
  }
}

/** The JSON Pointer of an amount argument: `/a/b` as given, a top-level name as `/name`. */
function pointerOf(argument: string): string {
  return argument.startsWith('/') ? argument : `/${argument.replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

/** The value at a JSON Pointer, or undefined. */
export function atPointer(value: unknown, pointer: string): unknown {
  let at = value;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (at === null || typeof at !== 'object' || !Object.prototype.hasOwnProperty.call(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

function limitsOf(rule: ParsedRule): RuleLimits | undefined {
  const { limits } = rule;
  if (!limits) return undefined;
  return {
    ...(limits.perTask !== undefined ? { perTask: limits.perTask } : {}),
    ...(limits.perWindow ? { perWindow: { calls: limits.perWindow.calls, windowMs: toMilliseconds(limits.perWindow.window) } } : {}),
    ...(limits.amount?.perTask !== undefined ? { amountPerTask: limits.amount.perTask } : {}),
    ...(limits.amount?.perWindow
      ? { amountPerWindow: { max: limits.amount.perWindow.max, windowMs: toMilliseconds(limits.amount.perWindow.window) } }
      : {}),
  };
}

/**
 * Validates and compiles the rules (the config's, or those given in code): an invalid one throws a
 * ConfigError naming `where[index]`, the rule's name and the field.
 */
export function compileRules(rules: unknown, where = 'approvals.rules'): CompiledRule[] {
  const parsed = approvalRulesSchema.safeParse(rules ?? []);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const [index, ...field] = issue.path;
      const named = typeof index === 'number' ? ruleLabel(where, index, (rules as Array<{ name?: unknown }>)[index]?.name) : where;
      return `${named}${field.length > 0 ? `.${field.map(String).join('.')}` : ''}: ${issue.message}`;
    });
    throw new ConfigError(`invalid approval rules: ${problems.join('; ')}`);
  }
  return parsed.data.map((rule, index) => {
    const label = ruleLabel(where, index, rule.name);
    const approves = rule.decision === 'approve';
    const condition = rule.when === undefined ? undefined : compileCondition(rule.when, `${label}.when`, approves);
    const amountPointer = rule.limits?.amount ? pointerOf(rule.limits.amount.argument) : undefined;
    const limits = limitsOf(rule);
    const evaluate = (tool: string, args: unknown): ConditionOutcome =>
      !toolMatches(rule.tool, tool) ? { matches: false } : condition === undefined ? { matches: true } : condition(args);
    return {
      name: rule.name,
      tool: rule.tool,
      decision: rule.decision,
      ...(rule.reason !== undefined ? { reason: rule.reason } : {}),
      ...(limits ? { limits } : {}),
      ...(amountPointer ? { amountPointer } : {}),
      matches: (tool: string, args: unknown) => {
        const outcome = evaluate(tool, args);
        return 'matches' in outcome && outcome.matches;
      },
      evaluate,
    };
  });
}

function ruleLabel(where: string, index: number, name: unknown): string {
  return `${where}[${index}]${typeof name === 'string' ? ` (${JSON.stringify(name)})` : ''}`;
}

/** The rules a worker decides by: those given in code first, then the config's; no two share a name. */
export function workerRules(configured: unknown, fromCode: ApprovalRule[] = []): CompiledRule[] {
  const rules = [...compileRules(fromCode, 'createWorker approvalRules'), ...compileRules(configured)];
  const names = new Set<string>();
  for (const rule of rules) {
    if (names.has(rule.name))
      throw new ConfigError(
        `approval rules: two rules are named ${JSON.stringify(rule.name)}; names are recorded as rule:<name>, so each is unique`,
      );
    names.add(rule.name);
  }
  return rules;
}
