import { SpanKind, SpanStatusCode, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import * as semconv from '../common/gen-ai-semconv';
import { TOLLGATE_ATTRIBUTES } from '../common/telemetry';
import type { TurnMessage } from '../common/contract/conversation';

/** What one attempt of a model step spent and how long it took, for the worker's metrics. */
export interface ModelStepObservation {
  model: string;
  inputTokens: number;
  outputTokens: number;
  durationSeconds: number;
  /** Left out when no chunk arrived. */
  firstChunkSeconds?: number;
}

/** What the activities report to: the worker's tracer (none when tracing is off) and its metrics. */
export interface ActivityTelemetry {
  tracer?: Tracer;
  /** Whether spans carry prompts, texts and tool arguments (after the redaction pass). */
  recordContent: boolean;
  observeModelStep(observation: ModelStepObservation): void;
}

/** Activities of a worker without telemetry. */
export const NO_TELEMETRY: ActivityTelemetry = { recordContent: false, observeModelStep: () => undefined };

/**
 * The `gen_ai.provider.name` of an AI SDK model's provider id (`openai.chat`, `anthropic.messages`,
 * `google.generative-ai`, …): the conventions' name where they have one, else the id's first part
 * (`tollgate` for the scripted model, the entry's name for an openai-compatible one).
 */
export function genAiProviderName(providerId: string): string {
  const [family] = providerId.split('.');
  switch (family) {
    case 'openai':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_OPENAI;
    case 'anthropic':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC;
    case 'google':
      return providerId.startsWith('google.vertex')
        ? semconv.GEN_AI_PROVIDER_NAME_VALUE_GCP_VERTEX_AI
        : semconv.GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI;
    case 'mistral':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_MISTRAL_AI;
    case 'amazon-bedrock':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_AWS_BEDROCK;
    case 'azure':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_AZURE_AI_OPENAI;
    case 'xai':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_X_AI;
    case 'cohere':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_COHERE;
    case 'deepseek':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_DEEPSEEK;
    case 'groq':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_GROQ;
    case 'perplexity':
      return semconv.GEN_AI_PROVIDER_NAME_VALUE_PERPLEXITY;
    default:
      return family;
  }
}

/**
 * The `chat <model>` span of one model step's attempt, a child of Temporal's `RunActivity:modelStep`
 * span (every attempt is a real request to the provider, so each gets its own span).
 */
export function startChatSpan({
  telemetry,
  provider,
  model,
  maxOutputTokens,
  step,
  attempt,
}: {
  telemetry: ActivityTelemetry;
  /** The AI SDK model's provider id. */
  provider: string;
  model: string;
  maxOutputTokens?: number;
  step: number;
  attempt: number;
}): Span | undefined {
  const attributes: Attributes = {
    [semconv.ATTR_GEN_AI_OPERATION_NAME]: semconv.GEN_AI_OPERATION_NAME_VALUE_CHAT,
    [semconv.ATTR_GEN_AI_PROVIDER_NAME]: genAiProviderName(provider),
    [semconv.ATTR_GEN_AI_REQUEST_MODEL]: model,
    ...(maxOutputTokens !== undefined ? { [semconv.ATTR_GEN_AI_REQUEST_MAX_TOKENS]: maxOutputTokens } : {}),
    [TOLLGATE_ATTRIBUTES.step]: step,
    [TOLLGATE_ATTRIBUTES.attempt]: attempt,
  };
  return telemetry.tracer?.startSpan(`${semconv.GEN_AI_OPERATION_NAME_VALUE_CHAT} ${model}`, { kind: SpanKind.CLIENT, attributes });
}

/** The longest provider-given text (the response's model name or id) a span attribute keeps. */
const MAX_PROVIDER_TEXT_CHARS = 128;

/** A finish reason as the conventions' output messages name it (the AI SDK's `tool-calls` is `tool_call`, …). */
export function genAiFinishReason(reason: string): string {
  if (reason === 'tool-calls') return 'tool_call';
  if (reason === 'content-filter') return 'content_filter';
  return reason;
}

/** One part of a message in the conventions' input and output messages schemas. */
type MessagePart =
  | { type: 'text'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; response: unknown };

/** A turn's messages as `gen_ai.input.messages` holds them (role and parts; tool results as `tool_call_response`). */
export function genAiInputMessages(messages: TurnMessage[]): Array<{ role: string; parts: MessagePart[] }> {
  return messages.map((message) => {
    if (message.role === 'user') return { role: 'user', parts: [{ type: 'text', content: message.content }] };
    if (message.role === 'assistant') return { role: 'assistant', parts: assistantParts(message.text, message.toolCalls) };
    return { role: 'tool', parts: [{ type: 'tool_call_response', id: message.callId, response: message.result }] };
  });
}

/** The model's reply as `gen_ai.output.messages` holds it: one assistant message with its finish reason. */
export function genAiOutputMessages(
  text: string | undefined,
  toolCalls: Array<{ callId: string; tool: string; args: unknown }>,
  finishReason: string | undefined,
): Array<{ role: string; parts: MessagePart[]; finish_reason: string }> {
  return [{ role: 'assistant', parts: assistantParts(text, toolCalls), finish_reason: genAiFinishReason(finishReason ?? 'other') }];
}

function assistantParts(text: string | undefined, toolCalls: Array<{ callId: string; tool: string; args: unknown }>): MessagePart[] {
  return [
    ...(text ? [{ type: 'text' as const, content: text }] : []),
    ...toolCalls.map((call) => ({ type: 'tool_call' as const, id: call.callId, name: call.tool, arguments: call.args })),
  ];
}

/**
 * Ends a chat span with what the step produced, or with its failure: a stable type (`error.type`)
 * and a message the caller has already redacted (a provider's error text may echo a key).
 */
export function endChatSpan(
  span: Span | undefined,
  ended:
    | { inputTokens: number; outputTokens: number; finishReason?: string; responseModel?: string; responseId?: string }
    | { error: { type: string; message: string } },
): void {
  if (!span) return;
  if ('error' in ended) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: ended.error.message });
    span.setAttribute(ATTR_ERROR_TYPE, ended.error.type);
  } else {
    span.setAttributes({
      [semconv.ATTR_GEN_AI_USAGE_INPUT_TOKENS]: ended.inputTokens,
      [semconv.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: ended.outputTokens,
      [semconv.ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ended.finishReason ? [genAiFinishReason(ended.finishReason)] : [],
      ...(ended.responseModel ? { [semconv.ATTR_GEN_AI_RESPONSE_MODEL]: ended.responseModel.slice(0, MAX_PROVIDER_TEXT_CHARS) } : {}),
      ...(ended.responseId ? { [semconv.ATTR_GEN_AI_RESPONSE_ID]: ended.responseId.slice(0, MAX_PROVIDER_TEXT_CHARS) } : {}),
    });
  }
  span.end();
}
