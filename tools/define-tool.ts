import { z } from 'zod';
import { TOOL_EFFECTS, type ToolEffect } from '../common/codes';
import { EFFECT_TRAITS, type StatusForbiddenEffect, type StatusRequiredEffect, type WriteEffect } from '../common/effects';
import { toMilliseconds } from '../common/duration';
import type { ToolOutcome } from './tool-outcome';
import { TOOL_DEFAULTS } from '../common/defaults';

/** What a handler learns about the call it serves. */
export interface ToolContext {
  taskId: string;
  callId: string;
  /** The activity's attempt (Temporal's): 1 on its first try, higher on a retry; not the handler's runs, which `ToolEvent.executions` counts. */
  attempt: number;
  /** Aborted when the call's timeout passes or the activity is cancelled. */
  signal: AbortSignal;
  /** For writes: the key of this intent; a handler passes it to the service it calls, or names its output by it. */
  idempotencyKey?: string;
}

/** What a write's own status check says about an intent. */
export type StatusAnswer = 'applied' | 'not_applied' | 'unknown' | { state: 'applied'; data?: unknown };

/** What a status check or an idempotency-key function learns about the call. */
export interface IntentContext {
  taskId: string;
  tool: string;
  idempotencyKey: string;
}

/** What a tool's `authorize` learns about the call. */
export interface AuthorizeContext {
  taskId?: string;
}

/** A write's own status check: whether this intent already took effect. */
export type StatusCheck<Args = unknown> = (args: Args, context: IntentContext) => Promise<StatusAnswer> | StatusAnswer;

/** A write's idempotency key function: the key of the business intent. */
export type IdempotencyKeyFunction<Args = unknown> = (args: Args, context: { taskId: string; tool: string }) => string;

/**
 * The fields an effect level's traits (common/effects.ts) allow: the status check where it is
 * required (a reversible write without one does not compile), optional or not allowed; the
 * idempotency key only where calls are recorded as intents.
 */
type EffectFields<E extends ToolEffect, Args> = { effect: E } & (E extends StatusRequiredEffect
  ? {
      /**
       * Whether this intent already took effect: asked before every execution and after every
       * timeout; only its "not applied" lets a call run again.
       */
      status: StatusCheck<Args>;
    }
  : E extends StatusForbiddenEffect
    ? { status?: never }
    : {
        /** Whether this intent already took effect: asked after a cut-off, before anyone is asked. */
        status?: StatusCheck<Args>;
      }) &
  (E extends WriteEffect
    ? {
        /** The key of the business intent (default: task id + tool + hash of the canonical arguments). */
        idempotencyKey?: IdempotencyKeyFunction<Args>;
      }
    : { idempotencyKey?: never });

/** What every tool declares, whatever its effect. */
interface ToolSpecBase<Schema extends z.ZodType> {
  name: string;
  /** What the model reads to decide when to call the tool. */
  description: string;
  /** The arguments; every field `.describe()`d, since that is what the model reads. */
  input: Schema;
  /** Per execution: milliseconds, or a text such as `10s`. */
  timeout?: number | string;
  /** Executions at most, retries included (reads; writes follow their own rule). */
  maxAttempts?: number;
  /** Output beyond this many characters is cut; the event records the original size. */
  maxOutputChars?: number;
  /** How many calls of this tool may run at once in one worker. */
  concurrency?: number;
  /**
   * How long a running call may go without a heartbeat (the boundary sends them while it runs) before
   * Temporal takes its worker for lost: a call whose worker died is noticed then, not after its
   * timeout. Left out: no heartbeats, the timeout alone. With it, a cancelled turn's cancel reaches
   * the running call (its `signal` aborts).
   */
  heartbeatTimeout?: number | string;
  /** How long a call that needs approval waits for a human decision (default 24 h). */
  approvalTimeout?: number | string;
  /**
   * Whether a call waits for a person (or a rule, or a grant) before it runs, whatever its effect:
   * `true`, or a function of the arguments, evaluated at the boundary when the model step checks
   * the call and recorded with it. Default: the effect's (`irreversible_write` always does; it may
   * not be turned off).
   */
  needsApproval?: boolean | ((args: z.output<Schema>) => boolean);
  /** Refuses a call before it is scheduled (code `forbidden`): return the reason, or nothing to allow it. The task id is known when the boundary checks a call of a turn. */
  authorize?: (args: z.output<Schema>, context: AuthorizeContext) => string | undefined;
  /** The one line the Web UI shows for a call after the tool's name, e.g. `drafts/brief.md`; never a secret. Default: the first text argument. */
  summary?: (args: z.output<Schema>) => string;
  handler: (args: z.output<Schema>, context: ToolContext) => Promise<ToolOutcome | string | unknown> | ToolOutcome | string | unknown;
}

/** A tool as declared once: what the model reads, the runtime policy, and the handler; a union on its effect. */
export type ToolSpec<Schema extends z.ZodType> = {
  [E in ToolEffect]: ToolSpecBase<Schema> & EffectFields<E, z.output<Schema>>;
}[ToolEffect];

/** What a tool source tells of a tool it describes in JSON Schema (an MCP server's, an HTTP API's) rather than in zod. */
export interface SourceDescription {
  /** The source's name (`mcp`). */
  name: string;
  /** The model-visible JSON schema of the arguments; the tool's `input` validates against it. */
  jsonSchema: unknown;
  /** SHA-256 of what the model and an approver were shown (name, description, schema, annotations); a call recorded under another digest is refused. */
  definitionDigest: string;
}

/** What every registered tool holds, whatever its effect. */
interface ToolDefinitionBase {
  name: string;
  description: string;
  input: z.ZodType;
  timeoutMs: number;
  maxAttempts: number;
  maxOutputChars: number;
  concurrency: number;
  approvalTimeoutMs: number;
  /** Whether a call waits for a decision before it runs (see `defineTool`); the effect's default when left out. */
  needsApproval?: boolean | ((args: unknown) => boolean);
  /** How long a running call may go without a heartbeat before its worker is taken for lost; none when left out. */
  heartbeatTimeoutMs?: number;
  authorize?: (args: unknown, context: AuthorizeContext) => string | undefined;
  summary?: (args: unknown) => string;
  /** Argument fields the Web UI summary shows instead of `summary` (config `tools.<name>.summaryFields`). */
  summaryFields?: string[];
  /** Set by a tool source that describes the tool in JSON Schema: the schema and the digest of what was shown. */
  source?: SourceDescription;
  handler: (args: unknown, context: ToolContext) => Promise<unknown> | unknown;
}

/** A declared tool with its defaults filled in; the registry's unit, a union on its effect. */
export type ToolDefinition = { [E in ToolEffect]: ToolDefinitionBase & EffectFields<E, unknown> }[ToolEffect];

/** Checks what a registry cannot run safely (a definition built without `defineTool` escapes the compiler's check): a status check where the effect needs one. */
export function checkToolDefinition(tool: ToolDefinition): void {
  if (!TOOL_EFFECTS.includes(tool.effect))
    throw new Error(`tool ${tool.name}: effect must be one of ${TOOL_EFFECTS.join(', ')}, got "${String(tool.effect)}"`);
  const { statusCheck, label } = EFFECT_TRAITS[tool.effect];
  const status = (tool as { status?: unknown }).status;
  if (statusCheck === 'required' && typeof status !== 'function')
    throw new Error(`tool ${tool.name}: a ${tool.effect} needs a status lookup (status), or it could never be retried safely`);
  if (statusCheck === 'none' && status !== undefined)
    throw new Error(`tool ${tool.name}: a ${label} takes no status lookup (status); only writes are checked for their effect`);
  const { needsApproval } = tool;
  if (needsApproval !== undefined && typeof needsApproval !== 'boolean' && typeof needsApproval !== 'function')
    throw new Error(`tool ${tool.name}: needsApproval must be true, false or a function of the arguments`);
  if (EFFECT_TRAITS[tool.effect].needsApproval && needsApproval !== undefined && needsApproval !== true)
    throw new Error(`tool ${tool.name}: its effect (${tool.effect}) always waits for a person; needsApproval may only be true`);
}

const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** Declares a tool once; the model-visible schema, the runtime policy and the handler all come from here. */
export function defineTool<Schema extends z.ZodType>(spec: ToolSpec<Schema>): ToolDefinition {
  if (!TOOL_NAME.test(spec.name)) throw new Error(`tool name "${spec.name}" must be snake_case letters, digits and underscores`);
  const maxAttempts = spec.maxAttempts ?? TOOL_DEFAULTS.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1)
    throw new Error(`tool ${spec.name}: maxAttempts must be a whole number of at least 1`);
  const tool = {
    name: spec.name,
    description: spec.description,
    input: spec.input,
    effect: spec.effect,
    timeoutMs: spec.timeout === undefined ? TOOL_DEFAULTS.timeoutMs : toMilliseconds(spec.timeout),
    maxAttempts,
    maxOutputChars: spec.maxOutputChars ?? TOOL_DEFAULTS.maxOutputChars,
    concurrency: spec.concurrency ?? TOOL_DEFAULTS.concurrency,
    approvalTimeoutMs: spec.approvalTimeout === undefined ? TOOL_DEFAULTS.approvalTimeoutMs : toMilliseconds(spec.approvalTimeout),
    ...(spec.needsApproval === undefined ? {} : { needsApproval: spec.needsApproval as ToolDefinitionBase['needsApproval'] }),
    ...(spec.heartbeatTimeout === undefined ? {} : { heartbeatTimeoutMs: toMilliseconds(spec.heartbeatTimeout) }),
    idempotencyKey: spec.idempotencyKey as IdempotencyKeyFunction | undefined,
    status: spec.status as StatusCheck | undefined,
    authorize: spec.authorize as ToolDefinitionBase['authorize'],
    summary: spec.summary as ToolDefinitionBase['summary'],
    handler: spec.handler as ToolDefinitionBase['handler'],
  } as ToolDefinition;
  checkToolDefinition(tool);
  return tool;
}

/** The JSON schema of a tool's arguments, as the model sees it (field descriptions from `.describe()`). */
export function toolJsonSchema(tool: ToolDefinition): unknown {
  if (tool.source !== undefined) return tool.source.jsonSchema;
  let schema = jsonSchemas.get(tool.input);
  if (schema === undefined) {
    schema = z.toJSONSchema(tool.input, { io: 'input' });
    jsonSchemas.set(tool.input, schema);
  }
  return schema;
}

/** JSON schemas by zod schema: built once per tool, not at every model step. */
const jsonSchemas = new WeakMap<z.ZodType, unknown>();
