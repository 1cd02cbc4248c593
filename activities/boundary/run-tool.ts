import { Context } from '@temporalio/activity';
import type { BoundaryResult, RunToolInput } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import type { ToolEffect } from '../../common/codes';
import type { IdempotencyStore } from '../../intents/intent-store';
import { guardStore } from '../../intents/guard-store';
import type { ToolDefinition } from '../../tools/define-tool';
import type { ToolRegistry } from '../../tools/tool-registry';
import { checkToolCall } from './check-tool-call';
import { createReadExecutor } from './read-executor';
import { DEFAULT_SECRET_PATTERNS, redactText } from './redact';
import { createHandlerRun } from './run-handler';
import { createWriteExecutor } from './write-executor';

export { truncateOutput } from './run-handler';

/**
 * Why a call may not run under the effect the workflow decided: the worker of the model step
 * declared another effect for the tool than this worker does (a fleet mixing tool versions).
 * Undefined when they agree, or when the input names no effect (a caller that is not a turn).
 */
export function effectMismatch(tool: ToolDefinition, input: RunToolInput): string | undefined {
  if (input.effect === undefined || input.effect === tool.effect) return undefined;
  return `${tool.name} is not run: the model step's worker declared it ${input.effect}, this worker declares ${tool.effect}`;
}

/**
 * The `runTool` activity: the execution half of the boundary. It checks the call again (the model
 * step already did, but an activity can be started by anyone), then hands it to its effect's
 * executor: the handler runs under its timeout and concurrency limit (`run-handler.ts`; the timeout
 * counts the wait for a place too, and a call whose timeout or cancellation comes while it waits
 * never runs), then its outcome is redacted, truncated and normalized. Reads (`read-executor.ts`)
 * throw a retryable failure for Temporal's retry policy; writes (`write-executor.ts`) claim their
 * intent first and commit its receipt after, by the write protocol (`common/write-intent/`).
 */
export function createRunTool({
  registry,
  store,
  secretPatterns = DEFAULT_SECRET_PATTERNS,
}: {
  registry: ToolRegistry;
  store?: IdempotencyStore;
  secretPatterns?: readonly RegExp[];
}) {
  const handler = createHandlerRun(secretPatterns);
  const runRead = createReadExecutor(handler);
  const runWrite = createWriteExecutor({ handler, store: store && guardStore(store), secretPatterns });

  // How the boundary executes each effect level; a new level does not compile until it is here.
  const executors: Record<ToolEffect, (tool: ToolDefinition, args: unknown, input: RunToolInput) => Promise<BoundaryResult>> = {
    read: runRead,
    reversible_write: runWrite,
    irreversible_write: runWrite,
  };

  return async function runTool(input: RunToolInput): Promise<BoundaryResult> {
    // A call with a heartbeat timeout beats while it runs, so that Temporal tells a worker that died from one that works.
    const context = Context.current();
    const heartbeatTimeoutMs = context.info.heartbeatTimeoutMs ?? 0;
    const beats = heartbeatTimeoutMs > 0 ? setInterval(() => context.heartbeat(), Math.max(heartbeatTimeoutMs / 3, 50)) : undefined;
    try {
      return await runCall(input);
    } finally {
      clearInterval(beats);
    }
  };

  async function runCall(input: RunToolInput): Promise<BoundaryResult> {
    const checked = checkToolCall({ registry, request: input, allowedTools: input.allowedTools, taskId: input.taskId });
    if (checked.refusal) return BoundaryResults.refused(checked.refusal.code, checked.refusal.message);
    const tool = registry.get(input.tool)!;
    const mismatch = effectMismatch(tool, input);
    if (mismatch) return BoundaryResults.refused('forbidden', mismatch);
    const declared = registry.policy(tool.name)!.policyDigest;
    if (input.policyDigest !== undefined && input.policyDigest !== declared) {
      const message =
        `${tool.name} is not run: the model step's worker declared another policy for it than this worker does ` +
        '(timeout, attempts, output limit, approval or start bound, or argument schema); the workers run different versions or configs';
      return BoundaryResults.refused('forbidden', message);
    }
    if (tool.source?.definitionDigest !== input.definitionDigest) {
      const message = `${tool.name}: this worker serves another definition of the tool (digest ${String(tool.source?.definitionDigest).slice(0, 12)}, the call was checked against ${String(input.definitionDigest).slice(0, 12)}); the call is not run`;
      return BoundaryResults.refused('forbidden', message);
    }
    const result = await executors[tool.effect](tool, tool.input.parse(input.args), input);
    // Every failure message leaves redacted, whatever built it (a store's error quoted in `not_run`, a lookup's reason).
    if (result.result.status !== 'error' || result.result.message === undefined) return result;
    return { ...result, result: { ...result.result, message: redactText(result.result.message, secretPatterns) } };
  }
}
