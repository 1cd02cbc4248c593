import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { WRITE_INTERRUPTED, type BoundaryResult, type RunToolInput } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { FAILURE_TYPE } from '../../common/failures';
import type { ToolEffect } from '../../common/codes';
import { EFFECT_TRAITS } from '../../common/effects';
import { checkToolCall } from './check-tool-call';
import { classifyError } from './classify-error';
import { ToolError } from '../../tools/tool-error';
import type { ToolDefinition } from '../../tools/define-tool';
import {
  DEFAULT_IN_FLIGHT_GRACE_MS,
  IntentStoreError,
  type ClaimResult,
  type IdempotencyStore,
  type WriteEffect,
} from '../../intents/intent-store';
import { guardStore } from '../../intents/guard-store';
import { STORE_FAULT_RETRY } from '../../common/defaults';
import { askStatusCheck, inFlight } from './lookup-status';
import { retryStoreCall } from './retry-store-call';
import { argsDigest } from '../../tools/canonical-json';
import { intentKey } from '../../tools/intent-key';
import { DEFAULT_SECRET_PATTERNS, redactText, redactValue } from './redact';
import { Semaphore } from './semaphore';
import { ToolOutcome } from '../../tools/tool-outcome';
import type { ToolRegistry } from '../../tools/tool-registry';
import type { ToolResult } from '../../common/contract/tools';
import type { IdempotencyOutcome } from '../../common/telemetry';

/** Output cut to the tool's limit, with the size it had before. */
export function truncateOutput(data: unknown, maxChars: number): { data: unknown; originalSize: number; truncated: boolean } {
  const text = typeof data === 'string' ? data : JSON.stringify(data ?? null);
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
type HandlerEnd = { started: true; outcome: ToolOutcome; interrupted: boolean; error?: unknown } | { started: false; reason: unknown };

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
 * step already did, but an activity can be started by anyone), waits for a place under the tool's
 * concurrency limit, runs the handler, then redacts, truncates and normalizes. The timeout counts
 * the wait for a place too; a call whose timeout or cancellation comes while it waits never runs
 * (a timeout with 0 executions, not an interruption).
 *
 * Reads: a retryable failure is thrown so that Temporal's retry policy repeats it; a final failure
 * is returned as a result the model can act on.
 * Writes: the intent's key is recorded as started before the handler runs and committed with the
 * receipt after it; an intent already committed is answered from its receipt without running the
 * handler; a handler cut off mid-way is thrown as `write_interrupted`, which the workflow never
 * retries blindly.
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
  const guardedStore = store && guardStore(store);
  const semaphores = new Map<string, Semaphore>();
  const semaphoreFor = (tool: ToolDefinition) => {
    let semaphore = semaphores.get(tool.name);
    if (!semaphore) semaphores.set(tool.name, (semaphore = new Semaphore(tool.concurrency)));
    return semaphore;
  };

  // How a handler ended: with the outcome it returned, `interrupted` when a throw or the timeout cut it off at an unknown point,
  // or not `started` when the timeout or a cancellation came while the call waited for a place under the tool's concurrency limit.
  async function runHandler(tool: ToolDefinition, args: unknown, input: RunToolInput, idempotencyKey?: string): Promise<HandlerEnd> {
    const context = Context.current();
    const attempt = context.info.attempt;
    const controller = new AbortController();
    const onCancel = () => controller.abort(context.cancellationSignal.reason);
    context.cancellationSignal.addEventListener('abort', onCancel);
    if (context.cancellationSignal.aborted) onCancel();
    // The timeout counts from here, so the wait for a place is inside it.
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new TimeoutError(`${tool.name} timed out after ${tool.timeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, tool.timeoutMs);
    });
    timedOut.catch(() => undefined);
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
      const raw = await Promise.race([handled, timedOut]);
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

  // Why a call never started: the message of its timeout, or the cancellation to rethrow.
  function notStarted(tool: ToolDefinition, reason: unknown): string {
    if (reason instanceof TimeoutError)
      return `${reason.message} waiting for a place under its concurrency limit of ${tool.concurrency}; it did not run`;
    throw reason;
  }

  // The handler's outcome as the model may see it: redacted, truncated, with the executions counted.
  function normalize(tool: ToolDefinition, outcome: ToolOutcome, executions: number): BoundaryResult {
    if (!outcome.ok)
      return BoundaryResults.failure(outcome.code, redactText(outcome.message, secretPatterns), {
        executions,
        retryable: outcome.retryable,
      });
    const { data, originalSize, truncated } = truncateOutput(redactValue(outcome.data, secretPatterns), tool.maxOutputChars);
    return BoundaryResults.of({ status: 'success', data }, { executions, originalSize, truncated });
  }

  async function runRead(tool: ToolDefinition, args: unknown, input: RunToolInput): Promise<BoundaryResult> {
    const attempt = Context.current().info.attempt;
    const end = await runHandler(tool, args, input);
    if (!end.started) {
      throw ApplicationFailure.create({
        type: FAILURE_TYPE.transient_failure,
        message: notStarted(tool, end.reason),
        nonRetryable: false,
        details: [{ executions: attempt - 1 }],
      });
    }
    const normalized = normalize(tool, end.outcome, attempt);
    const { result } = normalized;
    if (result.status === 'error' && result.retryable) {
      // A service that said when to come back (HTTP Retry-After, capped by its source) is asked again then, not at the backoff's time.
      const retryAfterMs = end.outcome.ok ? undefined : end.outcome.retryAfterMs;
      throw ApplicationFailure.create({
        type: result.code,
        message: result.message,
        nonRetryable: false,
        details: [{ executions: attempt }],
        ...(retryAfterMs !== undefined ? { nextRetryDelay: retryAfterMs } : {}),
      });
    }
    return normalized;
  }

  async function runWrite(tool: ToolDefinition, args: unknown, input: RunToolInput): Promise<BoundaryResult> {
    if (!guardedStore) throw new Error(`tool ${tool.name} is a write, and this worker has no idempotency store`);
    const store = guardedStore;
    const context = Context.current();
    const attempt = context.info.attempt;
    const key = intentKey(tool, args, input.taskId);
    const effect = tool.effect as WriteEffect;
    const traits = EFFECT_TRAITS[effect];
    // Whether the tool's own status check may settle what the store cannot (a receipt the world no longer holds, an attempt nobody confirmed).
    const statusSettles = traits.retry === 'after_status_check' && typeof tool.status === 'function';
    // This attempt's claim token: a claim tried again after a lost answer finds its own record, and commit, release and endLease name it.
    const token = randomUUID();
    const unknownOutcome = (message: string, idempotency: IdempotencyOutcome): BoundaryResult => ({
      ...BoundaryResults.outcomeUnknown(message, 0),
      idempotency,
    });
    const fromReceipt = (receipt: ToolResult, idempotency: IdempotencyOutcome = 'receipt'): BoundaryResult => ({
      ...BoundaryResults.fromReceipt(receipt, 0),
      idempotency,
    });
    const logStoreFault = (what: string, error: unknown) =>
      context.log.warn(what, {
        tool: tool.name,
        callId: input.callId,
        key,
        message: redactText(error instanceof Error ? error.message : String(error), secretPatterns),
      });
    // A store write whose failure costs only a later lookup: the verdict in hand stands either way.
    const bestEffort = (what: string, work: () => Promise<unknown>) =>
      work().catch((error: unknown) => {
        if (!IntentStoreError.isInstance(error)) throw error;
        logStoreFault(what, error);
      });
    const check = () => askStatusCheck({ tool, args, taskId: input.taskId, idempotencyKey: key, secretPatterns });
    // Whether a claim try failed: its answer may have been lost after the store took a record over, which a later try cannot see.
    let claimTryFailed = false;
    const claimFor = (supersede?: string) =>
      retryStoreCall({
        operation: `claim intent ${key}`,
        call: () =>
          store.claim({
            key,
            taskId: input.taskId,
            tool: tool.name,
            callId: input.callId,
            argsDigest: argsDigest(args),
            effect,
            leaseMs: tool.timeoutMs,
            supersede,
            owner: token,
          }),
        onFailure: (error, tries) => {
          claimTryFailed = true;
          logStoreFault(`idempotency store failed a claim (try ${tries}), before the handler ran`, error);
        },
      });

    // Before the handler: the claim, or the answer that makes running it unnecessary or unsafe.
    const beforeHandler = async (): Promise<{ answer: BoundaryResult } | { owner: string }> => {
      let claim: ClaimResult = await claimFor();
      // A receipt answers a reversible write only while the tool's own check agrees: the world may have changed since (X, then Y, then X again).
      if (!claim.claimed && claim.record.state === 'committed' && claim.record.owner && traits.receiptRechecked && statusSettles) {
        if ((await check()).state === 'not_applied') claim = await claimFor(claim.record.owner);
      }
      if (!claim.claimed) {
        const { record } = claim;
        if (record.state === 'committed' && record.receipt) return { answer: fromReceipt(record.receipt) };
        if (statusSettles) {
          const checked = await check();
          if (checked.state === 'applied') {
            const { receipt } = checked;
            await bestEffort('could not record a receipt the status check found', () =>
              store.recordApplied({ key, taskId: input.taskId, tool: tool.name, argsDigest: argsDigest(args), receipt }),
            );
            return { answer: fromReceipt(receipt, 'status_check') };
          }
        }
        return {
          answer: inFlight(record)
            ? unknownOutcome(
                `${tool.name} is being run by call ${record.callId} (started ${record.startedAt}); it is not run a second time`,
                'in_flight',
              )
            : unknownOutcome(
                `${tool.name} was started before (call ${record.callId}) and never confirmed; it is not run again`,
                'unconfirmed',
              ),
        };
      }
      // Another call's attempt whose lease ran out without a verdict: only the tool's own check may let it run again.
      // (A retry of the same call follows the workflow's own status lookup, which just asked it.)
      const replacedOther = claim.replaced?.state === 'started' && claim.replaced.callId !== input.callId;
      if (replacedOther || (claimTryFailed && !claim.replaced && statusSettles)) {
        const earlier = claim.replaced?.callId ?? 'unknown, a claim try lost its answer';
        const checked = await check();
        if (checked.state === 'applied') {
          const { receipt } = checked;
          await bestEffort('could not commit a receipt the status check found', () => store.commit({ key, owner: claim.owner, receipt }));
          return { answer: fromReceipt(receipt, 'status_check') };
        }
        if (checked.state === 'unknown') {
          await bestEffort('could not end a lease', () => store.endLease({ key, owner: claim.owner }));
          return {
            answer: unknownOutcome(
              `${tool.name} was started before (call ${earlier}) and ${checked.reason}; it is not run again`,
              'unconfirmed',
            ),
          };
        }
      }
      return { owner: claim.owner };
    };

    let before: Awaited<ReturnType<typeof beforeHandler>>;
    try {
      before = await beforeHandler();
    } catch (error) {
      if (!IntentStoreError.isInstance(error)) throw error;
      // The claim failed, so the handler never ran: nothing happened. A claim that did reach the store with its answer lost is given up.
      await bestEffort('could not give up a claim whose answer was lost', () => store.release({ key, owner: token }));
      return {
        ...BoundaryResults.notRun(
          `${tool.name} did not run, nothing happened: ${error.message}; it was tried for ${STORE_FAULT_RETRY.windowMs / 1000} s, and the call may be made again`,
        ),
        idempotency: 'store_failed',
      };
    }
    if ('answer' in before) return before.answer;
    const { owner } = before;
    const end = await runHandler(tool, args, input, key);
    if (!end.started) {
      // Nothing ran: the attempt is given up, so the next lookup finds it not applied rather than in flight.
      await bestEffort('could not give up an attempt that never started', () => store.release({ key, owner }));
      return { ...BoundaryResults.failure('transient_failure', notStarted(tool, end.reason), { executions: 0 }), idempotency: 'claimed' };
    }
    if (end.interrupted) {
      // A handler that threw has stopped, so the attempt is no longer in flight; one cut off by the timeout may still be applying.
      if ((end.error as Error | undefined)?.name !== 'TimeoutError')
        await bestEffort('could not end a lease', () => store.endLease({ key, owner }));
      throw ApplicationFailure.create({
        type: WRITE_INTERRUPTED,
        message: redactText(end.outcome.ok ? 'interrupted' : end.outcome.message, secretPatterns),
        nonRetryable: true,
        details: [{ executions: 1 }],
      });
    }
    const normalized = normalize(tool, end.outcome, Math.max(attempt, 1));
    const { result } = normalized;
    try {
      if (result.status === 'success') {
        // False: another claim holds the intent now (this attempt's lease ran out meanwhile); its record is left as it is.
        if (!(await store.commit({ key, owner, receipt: result })))
          context.log.warn('a late commit changed nothing: the intent is committed already or held by a newer claim', {
            tool: tool.name,
            callId: input.callId,
            key,
          });
      } else await store.release({ key, owner });
    } catch (error) {
      // The handler ran: its verdict stands, and the intent stays started, so a later lookup says unknown rather than not applied.
      if (!IntentStoreError.isInstance(error)) throw error;
      logStoreFault('idempotency store failed after a write', error);
    }
    return { ...normalized, idempotency: 'claimed' };
  }

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
