import { ApplicationFailure, Context } from '@temporalio/activity';
import type { RunToolInput, RunToolResult, ToolFailureDetails } from '../common/types';
import { checkToolCall } from './check-tool-call';
import { classifyError } from './classify-error';
import type { ToolDefinition } from './define-tool';
import { redactText, redactValue } from './redact';
import { Semaphore } from './semaphore';
import { ToolOutcome } from './tool-outcome';
import type { ToolRegistry } from './tool-registry';

/** Output cut to the tool's limit, with the size it had before. */
export function truncateOutput(data: unknown, maxChars: number): { data: unknown; originalSize: number; truncated: boolean } {
  const text = typeof data === 'string' ? data : JSON.stringify(data ?? null);
  if (text.length <= maxChars) return { data, originalSize: text.length, truncated: false };
  return { data: `${text.slice(0, maxChars)}…[truncated: ${maxChars} of ${text.length} characters]`, originalSize: text.length, truncated: true };
}

class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/**
 * The `runTool` activity: the execution half of the boundary. It checks the call again (the model
 * step already did, but an activity can be started by anyone), waits for a place under the tool's
 * concurrency limit, runs the handler under its timeout, then truncates, redacts and normalizes.
 * A retryable failure is thrown so that Temporal's retry policy (from the tool's policy) repeats it;
 * a final failure is returned as a result the model can act on.
 */
export function createRunTool({ registry }: { registry: ToolRegistry }) {
  const semaphores = new Map<string, Semaphore>();
  const semaphoreFor = (tool: ToolDefinition) => {
    let semaphore = semaphores.get(tool.name);
    if (!semaphore) semaphores.set(tool.name, (semaphore = new Semaphore(tool.concurrency)));
    return semaphore;
  };

  return async function runTool(input: RunToolInput): Promise<RunToolResult> {
    const context = Context.current();
    const attempt = context.info.attempt;
    const checked = checkToolCall({ registry, request: input, allowedTools: input.allowedTools });
    if (checked.refusal) {
      return { status: 'error', ...checked.refusal, retryable: false, attempt: 0, originalSize: 0, truncated: false };
    }
    const tool = registry.get(input.tool)!;
    const args = tool.input.parse(input.args);

    const release = await semaphoreFor(tool).acquire();
    const controller = new AbortController();
    const onCancel = () => controller.abort(context.cancellationSignal.reason);
    context.cancellationSignal.addEventListener('abort', onCancel);
    let timer: NodeJS.Timeout | undefined;
    let raw: unknown;
    try {
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const error = new TimeoutError(`${tool.name} timed out after ${tool.timeoutMs} ms`);
          controller.abort(error);
          reject(error);
        }, tool.timeoutMs);
      });
      const handled = Promise.resolve().then(() => tool.handler(args, { taskId: input.taskId, callId: input.callId, attempt, signal: controller.signal }));
      raw = await Promise.race([handled, timedOut]);
    } catch (error) {
      const failure = classifyError(error);
      context.log.warn('tool handler threw', { tool: tool.name, callId: input.callId, attempt, code: failure.code, stack: (error as Error)?.stack });
      raw = ToolOutcome.error(failure.message, failure);
    } finally {
      clearTimeout(timer);
      context.cancellationSignal.removeEventListener('abort', onCancel);
      release();
    }

    const outcome = ToolOutcome.is(raw) ? raw : ToolOutcome.ok(raw);
    if (!outcome.ok) {
      const message = redactText(outcome.message);
      if (outcome.retryable) {
        const details: ToolFailureDetails = { attempt, originalSize: 0 };
        throw ApplicationFailure.create({ type: outcome.code, message, nonRetryable: false, details: [details] });
      }
      return { status: 'error', code: outcome.code, retryable: false, message, attempt, originalSize: 0, truncated: false };
    }
    const { data, originalSize, truncated } = truncateOutput(redactValue(outcome.data), tool.maxOutputChars);
    return { status: 'success', data, attempt, originalSize, truncated };
  };
}
