import { Context } from '@temporalio/activity';
import type { BoundaryResult, RunToolInput } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { deepJson } from '../../common/canonical-json';
import { DEFAULT_IN_FLIGHT_GRACE_MS } from '../../intents/intent-store';
import type { ToolDefinition } from '../../tools/define-tool';
import { ToolError } from '../../tools/tool-error';
import { ToolOutcome } from '../../tools/tool-outcome';
import { classifyError } from './classify-error';
import { redactText, redactValue } from './redact';
import { Semaphore } from './semaphore';

/**
 * Output cut to the tool's limit, with the size it had before. A value too deep for the platform's JSON writer goes on
 * as its JSON text: every later step (Temporal's payloads, the model's messages) would write it with that writer.
 */
export function truncateOutput(data: unknown, maxChars: number): { data: unknown; originalSize: number; truncated: boolean } {
  let text: string;
  try {
    text = typeof data === 'string' ? data : JSON.stringify(data ?? null);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    text = deepJson(data);
    data = text;
  }
  if (text.length <= maxChars) return { data, originalSize: text.length, truncated: false };
  return {
    data: `${text.slice(0, maxChars)}…[truncated: ${maxChars} of ${text.length} characters]`,
    originalSize: text.length,
    truncated: true,
  };
}

class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** How a handler ended, or that it never started. */
export type HandlerEnd =
  { started: true; outcome: ToolOutcome; interrupted: boolean; error?: unknown } | { started: false; reason: unknown };

/** Whether a handler that was cut off was cut off by its own timeout (it may still be applying). */
export function timedOut(end: HandlerEnd): boolean {
  return end.started && end.interrupted && (end.error as Error | undefined)?.name === 'TimeoutError';
}

/**
 * Gives a call's place under the concurrency limit back when its handler has really stopped: one
 * that ignores its abort signal past its timeout still counts, for at most the in-flight grace.
 */
function keepPlaceUntilSettled(handled: Promise<unknown>, release: () => void): void {
  const bound = setTimeout(release, DEFAULT_IN_FLIGHT_GRACE_MS);
  bound.unref();
  handled
    .then(
      () => undefined,
      () => undefined,
    )
    .finally(() => {
      clearTimeout(bound);
      release();
    });
}

/** The handler's run as every executor uses it: under its timeout, its concurrency limit and the activity's cancellation. */
export interface HandlerRun {
  /**
   * Runs the handler once: with the outcome it returned, `interrupted` when a throw or the timeout
   * cut it off at an unknown point, or not `started` when the timeout or a cancellation came while
   * the call waited for a place under the tool's concurrency limit.
   */
  run(tool: ToolDefinition, args: unknown, input: RunToolInput, idempotencyKey?: string): Promise<HandlerEnd>;
  /** Why a call never started: the message of its timeout, or the cancellation rethrown. */
  notStarted(tool: ToolDefinition, reason: unknown): string;
  /** The handler's outcome as the model may see it: redacted, truncated, with the executions counted. */
  normalize(tool: ToolDefinition, outcome: ToolOutcome, executions: number): BoundaryResult;
}

/** The handler runs of one worker: one concurrency limit per tool, shared by all its calls. */
export function createHandlerRun(secretPatterns: readonly RegExp[]): HandlerRun {
  const semaphores = new Map<string, Semaphore>();
  const semaphoreFor = (tool: ToolDefinition) => {
    let semaphore = semaphores.get(tool.name);
    if (!semaphore) semaphores.set(tool.name, (semaphore = new Semaphore(tool.concurrency)));
    return semaphore;
  };

  async function run(tool: ToolDefinition, args: unknown, input: RunToolInput, idempotencyKey?: string): Promise<HandlerEnd> {
    const context = Context.current();
    const attempt = context.info.attempt;
    const controller = new AbortController();
    const onCancel = () => controller.abort(context.cancellationSignal.reason);
    context.cancellationSignal.addEventListener('abort', onCancel);
    if (context.cancellationSignal.aborted) onCancel();
    // The timeout counts from here, so the wait for a place is inside it.
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new TimeoutError(`${tool.name} timed out after ${tool.timeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, tool.timeoutMs);
    });
    timeout.catch(() => undefined);
    let handled: Promise<unknown> | undefined;
    let release: (() => void) | undefined;
    try {
      release = await semaphoreFor(tool).acquire(controller.signal);
      if (controller.signal.aborted) throw controller.signal.reason;
    } catch (reason) {
      release?.();
      clearTimeout(timer);
      context.cancellationSignal.removeEventListener('abort', onCancel);
      return { started: false, reason };
    }
    try {
      handled = Promise.resolve().then(() =>
        tool.handler(args, { taskId: input.taskId, callId: input.callId, attempt, signal: controller.signal, idempotencyKey }),
      );
      const raw = await Promise.race([handled, timeout]);
      return { started: true, outcome: ToolOutcome.is(raw) ? raw : ToolOutcome.ok(raw), interrupted: false };
    } catch (error) {
      const failure = classifyError(error);
      context.log.warn('tool handler threw', {
        tool: tool.name,
        callId: input.callId,
        attempt,
        code: failure.code,
        stack: redactText(String((error as Error)?.stack), secretPatterns),
      });
      const outcome = ToolOutcome.error(failure.message, failure);
      // A ToolError is the handler's own verdict; anything else cut the handler off at an unknown point.
      return ToolError.isInstance(error)
        ? { started: true, outcome, interrupted: false }
        : { started: true, outcome, interrupted: true, error };
    } finally {
      clearTimeout(timer);
      context.cancellationSignal.removeEventListener('abort', onCancel);
      if (handled) keepPlaceUntilSettled(handled, release);
      else release();
    }
  }

  function notStarted(tool: ToolDefinition, reason: unknown): string {
    if (reason instanceof TimeoutError)
      return `${reason.message} waiting for a place under its concurrency limit of ${tool.concurrency}; it did not run`;
    throw reason;
  }

  function normalize(tool: ToolDefinition, outcome: ToolOutcome, executions: number): BoundaryResult {
    if (!outcome.ok)
      return BoundaryResults.failure(outcome.code, redactText(outcome.message, secretPatterns), {
        executions,
        retryable: outcome.retryable,
      });
    const { data, originalSize, truncated } = truncateOutput(redactValue(outcome.data, secretPatterns), tool.maxOutputChars);
    return BoundaryResults.of({ status: 'success', data }, { executions, originalSize, truncated });
  }

  return { run, notStarted, normalize };
}
