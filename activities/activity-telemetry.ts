import { SpanKind, SpanStatusCode, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { TOLLGATE_ATTRIBUTES } from '../common/telemetry';

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
 * The `chat <model>` span of one model step's attempt, a child of Temporal's `RunActivity:modelStep`
 * span (every attempt is a real request to the provider, so each gets its own span).
 */
export function startChatSpan({
  telemetry,
  provider,
  model,
  step,
  attempt,
}: {
  telemetry: ActivityTelemetry;
  provider: string;
  model: string;
  step: number;
  attempt: number;
}): Span | undefined {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': provider,
    'gen_ai.system': provider,
    'gen_ai.request.model': model,
    [TOLLGATE_ATTRIBUTES.step]: step,
    [TOLLGATE_ATTRIBUTES.attempt]: attempt,
  };
  return telemetry.tracer?.startSpan(`chat ${model}`, { kind: SpanKind.CLIENT, attributes });
}

/** The longest provider-given text (the response's model name) a span attribute keeps. */
const MAX_PROVIDER_TEXT_CHARS = 128;

/**
 * Ends a chat span with what the step produced, or with its failure: a stable type (`error.type`)
 * and a message the caller has already redacted (a provider's error text may echo a key).
 */
export function endChatSpan(
  span: Span | undefined,
  ended:
    | { inputTokens: number; outputTokens: number; finishReason?: string; responseModel?: string }
    | { error: { type: string; message: string } },
): void {
  if (!span) return;
  if ('error' in ended) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: ended.error.message });
    span.setAttribute('error.type', ended.error.type);
  } else {
    span.setAttributes({
      'gen_ai.usage.input_tokens': ended.inputTokens,
      'gen_ai.usage.output_tokens': ended.outputTokens,
      'gen_ai.response.finish_reasons': ended.finishReason ? [ended.finishReason] : [],
      ...(ended.responseModel ? { 'gen_ai.response.model': ended.responseModel.slice(0, MAX_PROVIDER_TEXT_CHARS) } : {}),
    });
  }
  span.end();
}
