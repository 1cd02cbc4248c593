import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4Usage } from '@ai-sdk/provider';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { z } from 'zod';
import { toMilliseconds } from '../../common/duration';
import type { ModelSelection, Usage } from '../../common/contract/turn';
import {
  MODEL_FAILURES,
  type CheckedToolCall,
  type ModelStepInput,
  type ModelStepResult,
  type StreamProgress,
} from '../../common/activity-types';
import type { TollgateConfig } from '../../config/config-schema';
import type { ModelEntry } from './model-config';
import { argsDigest } from '../../tools/canonical-json';
import { checkToolCall, shownArguments } from '../boundary/check-tool-call';
import { redactorForConfig, type Redactor } from '../../hardened/redact';
import { redactFailure } from '../../hardened/redact-failure';
import { classifyModelError, IncompleteStreamError } from './model-errors';
import { ATTR_GEN_AI_INPUT_MESSAGES, ATTR_GEN_AI_OUTPUT_MESSAGES } from '../../common/gen-ai-semconv';
import {
  endChatSpan,
  genAiInputMessages,
  genAiOutputMessages,
  NO_TELEMETRY,
  startChatSpan,
  type ActivityTelemetry,
} from '../activity-telemetry';
import { toModelPrompt } from './model-prompt';
import { scriptedModel } from './language-model';
import { toolJsonSchema } from '../../tools/define-tool';
import type { ToolRegistry } from '../../tools/tool-registry';
import type { TurnMessage } from '../../common/contract/conversation';
import type { IdempotencyStore } from '../../intents/intent-store';
import { currentWorkflowId, keepsContents, keepTranscript, resolveKeptResults, stepMessages, storeName } from '../kept-results';
import type { AgentRegistry } from '../../agents/agent-registry';
import { agentStep } from './agent-step';
import { checkHandoffCall, handoffTargets, handoffTools } from './handoff-calls';
import { checkDelegateCall, delegateTools, subagentsOf } from './delegate-calls';

const LIVE_TEXT_CHARS = 8_000;
const KEEP_ALIVE_MS = 5_000;

const scriptSchema = z.array(
  z.union([
    z.strictObject({ toolCalls: z.array(z.strictObject({ tool: z.string(), args: z.unknown() })), text: z.string().optional() }),
    z.strictObject({ text: z.string() }),
  ]),
);

/** How often, at most, the live text goes to the heartbeat after the first chunk (the server receives heartbeats less often still). */
const LIVE_BEAT_MS = 250;

/**
 * Paces one activity's heartbeats: `now` beats at once, `soon` beats at most every LIVE_BEAT_MS
 * (the latest progress, at the end of the interval), `flush` sends what `soon` still holds back.
 * A stream sends a chunk per token; beating per chunk redacted and encoded the whole text each time.
 */
function heartbeatPacer(beat: () => void) {
  let lastAt = Number.NEGATIVE_INFINITY;
  let pending: NodeJS.Timeout | undefined;
  const now = () => {
    clearTimeout(pending);
    pending = undefined;
    lastAt = performance.now();
    beat();
  };
  return {
    now,
    soon() {
      if (pending) return;
      const wait = lastAt + LIVE_BEAT_MS - performance.now();
      if (wait <= 0) now();
      else pending = setTimeout(now, wait);
    },
    flush() {
      if (pending) now();
    },
    stop() {
      clearTimeout(pending);
      pending = undefined;
    },
  };
}

function nonRetryable(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}

/**
 * A stream cut off after chunks went out: final for this activity, with what went out as its
 * details (the chunk count and the redacted text, its last 8,000 characters), which the turn shows
 * to the person who decides whether to ask the model again. A killed worker's next attempt passes
 * on what the last heartbeat recorded.
 */
function interrupted(message: string, progress: StreamProgress): ApplicationFailure {
  return ApplicationFailure.create({ type: MODEL_FAILURES.streamInterrupted, message, nonRetryable: true, details: [progress] });
}

/** The model a step runs on, and the output cap its config entry sets. */
interface ResolvedModel {
  model: LanguageModelV4;
  maxOutputTokens?: number;
  /** False when the entry asks for the whole reply at once (`stream: false`). */
  stream: boolean;
}

function resolveModel(
  selection: ModelSelection | undefined,
  config: TollgateConfig,
  models: Map<string, { model: LanguageModelV4; entry?: ModelEntry }>,
): ResolvedModel {
  const chosen = selection ?? config.model.default;
  if (typeof chosen === 'string') {
    const configured = models.get(chosen);
    if (!configured)
      throw nonRetryable(
        MODEL_FAILURES.invalidModel,
        `model "${chosen}" is not in the config's model list (${[...models.keys()].join(', ')})`,
      );
    return {
      model: configured.model,
      maxOutputTokens: configured.entry && 'maxOutputTokens' in configured.entry ? configured.entry.maxOutputTokens : undefined,
      stream: !(configured.entry && 'stream' in configured.entry && configured.entry.stream === false),
    };
  }
  if (chosen?.provider !== 'scripted')
    throw nonRetryable(MODEL_FAILURES.invalidModel, `model must be a configured name or { provider: 'scripted', script? }`);
  if (chosen.script === undefined) return { model: scriptedModel(), stream: true };
  const parsed = scriptSchema.safeParse(chosen.script);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw nonRetryable(MODEL_FAILURES.invalidModel, `model.script.${issue.path.map(String).join('.')}: ${issue.message}`);
  }
  return { model: scriptedModel(parsed.data), stream: true };
}

function totalUsage(usage: LanguageModelV4Usage | undefined): Usage {
  return { inputTokens: usage?.inputTokens.total ?? 0, outputTokens: usage?.outputTokens.total ?? 0 };
}

/** Reports one attempt to the worker's metrics, from its end (success or failure). */
function observe(
  telemetry: ActivityTelemetry,
  { model, usage, startedAt, firstChunkAt }: { model: string; usage?: LanguageModelV4Usage; startedAt: number; firstChunkAt?: number },
): void {
  const { inputTokens, outputTokens } = totalUsage(usage);
  telemetry.observeModelStep({
    model,
    inputTokens,
    outputTokens,
    durationSeconds: (performance.now() - startedAt) / 1000,
    ...(firstChunkAt !== undefined ? { firstChunkSeconds: (firstChunkAt - startedAt) / 1000 } : {}),
  });
}

/**
 * The `modelStep` activity: streams one step from the model through the AI SDK provider interface
 * and passes each tool call it asks for through the boundary's checks (known tool, allowed for the
 * task, valid JSON and valid arguments), so the workflow only ever schedules calls that may run.
 *
 * The retry rule: 429, 529, 5xx and connection errors, and a stream that ends without the
 * provider's completion signal, are retried only while no chunk has gone out in this step;
 * Retry-After sets the next delay, capped by `model.maxRetryDelay`. Once a chunk went out, a
 * failure is final (`stream_interrupted`), and that fact survives a worker crash because it is in
 * the heartbeat details the next attempt reads.
 */
export function createModelStep({
  registry,
  config,
  models,
  redactor = redactorForConfig(config),
  telemetry = NO_TELEMETRY,
  store,
  agents,
}: {
  registry: ToolRegistry;
  /** The agents this worker declares: a step of a turn's agent runs only when its digest matches. */
  agents?: AgentRegistry;
  config: TollgateConfig;
  models: Map<string, { model: LanguageModelV4; entry?: ModelEntry }>;
  /** The worker's redaction pass: applied to the live text, the step's text, summaries, shown arguments, refusals, failures and spans. */
  redactor?: Redactor;
  /** The store the worker's calls keep large results in; a step reads the results its messages refer to from it. */
  store?: IdempotencyStore;
  /** The worker's tracer and metrics: one `chat <model>` span and one observation per attempt. */
  telemetry?: ActivityTelemetry;
}) {
  const maxRetryDelayMs = toMilliseconds(config.model.maxRetryDelay);
  const step = streamStep({ registry, config, models, redactor, telemetry, maxRetryDelayMs, agents });
  const where = storeName(config.store);
  const keeps = keepsContents(config);
  return async function modelStep(input: ModelStepInput): Promise<ModelStepResult> {
    try {
      // What the turn kept is read back first: the model is sent every message and result itself.
      const source = { store: store ?? {}, storeName: where, workflowId: currentWorkflowId() ?? '' };
      const sent = await stepMessages(input, source);
      const transcript = keeps && source.workflowId ? await keepTranscript(input, source, input.taskId) : undefined;
      const result = await step({ ...input, messages: await resolveKeptResults(sent, source) });
      return transcript ? { ...result, transcript } : result;
    } catch (error) {
      // Whatever leaves the step (history, the worker's log, the turn's error) is redacted first.
      throw redactFailure(error, redactor);
    }
  };
}

/** A model step's input with every kept result read back. */
type ResolvedStepInput = Omit<ModelStepInput, 'messages' | 'earlier'> & { messages: TurnMessage[] };

/** One model step, its failures not yet redacted (see {@link createModelStep}). */
function streamStep({
  registry,
  config,
  models,
  redactor,
  telemetry,
  maxRetryDelayMs,
  agents,
}: {
  registry: ToolRegistry;
  config: TollgateConfig;
  models: Map<string, { model: LanguageModelV4; entry?: ModelEntry }>;
  redactor: Redactor;
  telemetry: ActivityTelemetry;
  maxRetryDelayMs: number;
  agents?: AgentRegistry;
}) {
  return async (input: ResolvedStepInput): Promise<ModelStepResult> => {
    const context = Context.current();
    const earlier = context.info.heartbeatDetails as StreamProgress | undefined;
    if (earlier && earlier.chunks > 0) {
      throw interrupted(
        `an earlier attempt of this model step had streamed ${earlier.chunks} chunks before it was cut off; it is not replayed`,
        { chunks: earlier.chunks, text: earlier.text ?? '' },
      );
    }
    // The turn's agent, as this worker declares it (another declaration refuses the step): its instructions, settings and tools.
    const agent = agentStep(agents, input);
    const allowedTools = agent ? agent.allowedTools : input.allowedTools;
    const resolved = resolveModel(input.model, config, models);
    const { model, stream: streaming } = resolved;
    const maxOutputTokens = agent?.callOptions.maxOutputTokens ?? resolved.maxOutputTokens;
    const tools: LanguageModelV4FunctionTool[] = registry
      .list()
      .filter((tool) => !allowedTools || allowedTools.includes(tool.name))
      .map((tool) => ({
        type: 'function',
        name: tool.name,
        description: tool.description,
        inputSchema: toolJsonSchema(tool) as LanguageModelV4FunctionTool['inputSchema'],
      }));
    // The agents the step's agent may hand the turn to, each as a `transfer_to_<agent>` tool.
    tools.push(...handoffTools(handoffTargets(agent?.definition, agents)));
    // The agents the step's agent may call as tools (subagents), each as a tool of its name (agentStep checked its digest).
    const delegating = input.agent ? agents?.get(input.agent.name) : undefined;
    tools.push(...delegateTools(subagentsOf(delegating, agents)));

    const progress: StreamProgress = { chunks: 0, text: '' };
    const startedAt = performance.now();
    let firstChunkAt: number | undefined;
    const span = startChatSpan({
      telemetry,
      provider: model.provider,
      model: model.modelId,
      maxOutputTokens,
      step: input.step,
      attempt: context.info.attempt,
    });
    if (span && telemetry.recordContent)
      span.setAttribute(ATTR_GEN_AI_INPUT_MESSAGES, redactor.text(JSON.stringify(genAiInputMessages(input.messages))));
    // The live view reads the heartbeat details: the text is redacted whole first, so no secret is cut in two and kept.
    const beats = heartbeatPacer(() =>
      context.heartbeat({ chunks: progress.chunks, text: redactor.text(progress.text).slice(-LIVE_TEXT_CHARS) }),
    );
    const chunk = () => {
      firstChunkAt ??= performance.now();
      progress.chunks++;
      // The first chunk is recorded at once: the rule that a step is not replayed once a chunk went out rests on it.
      if (progress.chunks === 1) beats.now();
      else beats.soon();
    };
    const keepAlive = setInterval(beats.now, KEEP_ALIVE_MS);
    const requested: Array<{ toolName: string; input: string }> = [];
    let usage: LanguageModelV4Usage | undefined;
    let finishReason: string | undefined;
    let responseModel: string | undefined;
    let responseId: string | undefined;
    try {
      const options = {
        ...agent?.callOptions,
        prompt: toModelPrompt(input.messages, agent?.system),
        tools,
        maxOutputTokens,
        // The task id travels as data; the scripted model reads it here, providers ignore a namespace that is not theirs.
        providerOptions: { ...agent?.callOptions.providerOptions, tollgate: { taskId: input.taskId } },
        abortSignal: context.cancellationSignal,
      };
      if (!streaming) {
        // The whole reply at once: no chunk goes out before it is complete, so a failure is retried like any other.
        const reply = await model.doGenerate(options);
        for (const part of reply.content) {
          if (part.type === 'text') progress.text += part.text;
          else if (part.type === 'tool-call') requested.push({ toolName: part.toolName, input: part.input });
        }
        usage = reply.usage;
        finishReason = reply.finishReason.unified;
        responseModel = reply.response?.modelId;
        responseId = reply.response?.id;
        firstChunkAt = performance.now();
        // A whole reply the provider marks interrupted was cut short too (and, with no chunk out, is asked again).
        if (finishReason === 'interrupted') throw new IncompleteStreamError();
      }
      const { stream } = streaming ? await model.doStream(options) : { stream: [] };
      let finished = !streaming;
      for await (const part of stream) {
        if (part.type === 'text-delta') {
          if (part.delta === '') continue;
          progress.text += part.delta;
          chunk();
        } else if (part.type === 'reasoning-delta' || part.type === 'tool-input-start' || part.type === 'tool-input-delta') chunk();
        else if (part.type === 'tool-call') {
          requested.push({ toolName: part.toolName, input: part.input });
          chunk();
        } else if (part.type === 'finish') {
          usage = part.usage;
          finishReason = part.finishReason.unified;
          finished = true;
          // The provider saw the answer end without its completion signal: the reply may be cut short, so the stream broke.
          if (finishReason === 'interrupted') throw new IncompleteStreamError();
        } else if (part.type === 'response-metadata') {
          responseModel = part.modelId ?? responseModel;
          responseId = part.id ?? responseId;
        } else if (part.type === 'error') throw part.error;
      }
      // A stream that closes with no finish part at all is cut short the same way.
      if (!finished) throw new IncompleteStreamError();
      beats.flush();
    } catch (error) {
      const failure = classifyModelError(error);
      // A provider's error text may echo the key it was sent: the span, like the failure, gets it redacted.
      const message = redactor.text(failure.message);
      const type =
        progress.chunks > 0 ? MODEL_FAILURES.streamInterrupted : failure.retryable ? MODEL_FAILURES.unavailable : MODEL_FAILURES.error;
      endChatSpan(span, { error: { type, message } });
      observe(telemetry, { model: model.modelId, usage, startedAt, firstChunkAt });
      if (progress.chunks > 0) {
        throw interrupted(`the model stream broke after ${progress.chunks} chunks had gone out; not replayed: ${message}`, {
          chunks: progress.chunks,
          text: redactor.text(progress.text).slice(-LIVE_TEXT_CHARS),
        });
      }
      if (failure.retryable) {
        const nextRetryDelay = failure.retryAfterMs === undefined ? undefined : Math.min(failure.retryAfterMs, maxRetryDelayMs);
        throw ApplicationFailure.create({
          type: MODEL_FAILURES.unavailable,
          message,
          nonRetryable: false,
          nextRetryDelay,
          details: [{ status: failure.status, retryAfterMs: failure.retryAfterMs }],
        });
      }
      throw nonRetryable(MODEL_FAILURES.error, message);
    } finally {
      clearInterval(keepAlive);
      beats.stop();
    }

    const toolCalls: CheckedToolCall[] = requested.map(({ toolName, input: rawInput }, index) => {
      const callId = `call-${input.step}-${index}`;
      let args: unknown;
      try {
        args = rawInput.trim() === '' ? {} : JSON.parse(rawInput);
      } catch (error) {
        const message = redactor.text(`the arguments are not valid JSON (${(error as Error).message})`);
        const shown = shownArguments(rawInput, redactor);
        return {
          callId,
          tool: toolName,
          args: rawInput,
          argsDigest: argsDigest(rawInput),
          ...shown,
          policy: registry.policy(toolName),
          refusal: { code: 'invalid_arguments', message },
        };
      }
      const handoff = checkHandoffCall({ callId, tool: toolName, args, agent: agent?.definition, agents, redactor });
      if (handoff) return handoff;
      const delegate = checkDelegateCall({ callId, tool: toolName, args, agent: delegating, agents, registry, redactor });
      if (delegate) return delegate;
      const checked = checkToolCall({
        registry,
        request: { callId, tool: toolName, args },
        allowedTools,
        taskId: input.taskId,
        redactor,
      });
      return checked.refusal ? { ...checked, refusal: { ...checked.refusal, message: redactor.text(checked.refusal.message) } } : checked;
    });
    const total = totalUsage(usage);
    const text = progress.text ? redactor.text(progress.text) : undefined;
    if (span && telemetry.recordContent) {
      const calls = toolCalls.map(({ callId, tool, args, shownArgs, redactedValues }) => ({
        callId,
        tool,
        args: redactedValues ? shownArgs : args,
      }));
      span.setAttribute(ATTR_GEN_AI_OUTPUT_MESSAGES, redactor.text(JSON.stringify(genAiOutputMessages(text, calls, finishReason))));
    }
    endChatSpan(span, {
      ...total,
      finishReason,
      responseModel: responseModel && redactor.text(responseModel),
      responseId: responseId && redactor.text(responseId),
    });
    observe(telemetry, { model: model.modelId, usage, startedAt, firstChunkAt });
    // A final answer of an agent with an output schema is parsed and checked here, where the schema is.
    const output = agent?.checkAnswer && toolCalls.length === 0 ? { output: agent.checkAnswer(text) } : {};
    return { text, toolCalls, usage: total, ...output };
  };
}
