import { z } from 'zod';
import { TOOL_EFFECTS, type ToolEffect } from '../common/codes';
import { toMilliseconds } from '../common/duration';
import type { ToolOutcome } from './tool-outcome';

/** What a handler learns about the call it serves. */
export interface ToolContext {
  taskId: string;
  callId: string;
  /** 1 on the first execution, higher on a retry. */
  attempt: number;
  /** Aborted when the call's timeout passes or the activity is cancelled. */
  signal: AbortSignal;
}

/** A tool as declared once: what the model reads, the runtime policy, and the handler. */
export interface ToolSpec<Schema extends z.ZodType> {
  name: string;
  /** What the model reads to decide when to call the tool. */
  description: string;
  /** The arguments; every field `.describe()`d, since that is what the model reads. */
  input: Schema;
  effect: ToolEffect;
  /** Per execution: milliseconds, or a text such as `10s`. */
  timeout?: number | string;
  /** Executions at most, retries included (reads; writes follow their own rule). */
  maxAttempts?: number;
  /** Output beyond this many characters is cut; the event records the original size. */
  maxOutputChars?: number;
  /** How many calls of this tool may run at once in one worker. */
  concurrency?: number;
  handler: (args: z.output<Schema>, context: ToolContext) => Promise<ToolOutcome | string | unknown> | ToolOutcome | string | unknown;
}

/** A declared tool with its defaults filled in; the registry's unit. */
export interface ToolDefinition {
  name: string;
  description: string;
  input: z.ZodType;
  effect: ToolEffect;
  timeoutMs: number;
  maxAttempts: number;
  maxOutputChars: number;
  concurrency: number;
  handler: (args: unknown, context: ToolContext) => Promise<unknown> | unknown;
}

/** Defaults of a tool's policy when its declaration leaves them out. */
export const TOOL_DEFAULTS = { timeoutMs: 30_000, maxAttempts: 3, maxOutputChars: 8_000, concurrency: 8 } as const;

const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** Declares a tool once; the model-visible schema, the runtime policy and the handler all come from here. */
export function defineTool<Schema extends z.ZodType>(spec: ToolSpec<Schema>): ToolDefinition {
  if (!TOOL_NAME.test(spec.name)) throw new Error(`tool name "${spec.name}" must be snake_case letters, digits and underscores`);
  if (!TOOL_EFFECTS.includes(spec.effect)) throw new Error(`tool ${spec.name}: effect must be one of ${TOOL_EFFECTS.join(', ')}, got "${spec.effect}"`);
  const maxAttempts = spec.maxAttempts ?? TOOL_DEFAULTS.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error(`tool ${spec.name}: maxAttempts must be a whole number of at least 1`);
  return {
    name: spec.name,
    description: spec.description,
    input: spec.input,
    effect: spec.effect,
    timeoutMs: spec.timeout === undefined ? TOOL_DEFAULTS.timeoutMs : toMilliseconds(spec.timeout),
    maxAttempts,
    maxOutputChars: spec.maxOutputChars ?? TOOL_DEFAULTS.maxOutputChars,
    concurrency: spec.concurrency ?? TOOL_DEFAULTS.concurrency,
    handler: spec.handler as ToolDefinition['handler'],
  };
}

/** The JSON schema of a tool's arguments, as the model sees it (field descriptions from `.describe()`). */
export function toolJsonSchema(tool: ToolDefinition): unknown {
  return z.toJSONSchema(tool.input, { io: 'input' });
}
