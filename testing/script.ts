import { toMilliseconds, type Duration } from '../common/duration';
import { openaiStream, type FakeReply } from './fake-provider';

/** One step of a test turn's script: what the model answers to one request. */
export type ScriptStep =
  | { kind: 'toolCall'; tool: string; args: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'rateLimited'; retryAfterMs: number }
  | { kind: 'serverError'; status: number }
  | { kind: 'cutAfter'; chunks: number }
  | { kind: 'malformedToolCall'; tool: string; json: string };

/** Builders of script steps; each is one answer of the model, over HTTP as a provider sends it. */
export const script = {
  /** The model asks for one call of `tool` with `args`. */
  toolCall(tool: string, args: unknown = {}): ScriptStep {
    if (typeof tool !== 'string' || tool === '') throw new Error('script.toolCall: the tool name must be a non-empty string');
    return { kind: 'toolCall', tool, args };
  },
  /** The model answers with text and asks for nothing more: the turn's answer. */
  text(text: string): ScriptStep {
    if (typeof text !== 'string') throw new Error('script.text: the text must be a string');
    return { kind: 'text', text };
  },
  /** The provider answers 429 with a Retry-After header (default 1 second); the model step is retried after it. */
  rateLimited({ retryAfter = '1s' }: { retryAfter?: Duration } = {}): ScriptStep {
    return { kind: 'rateLimited', retryAfterMs: toMilliseconds(retryAfter) };
  },
  /** The provider answers with a server error (default 503); the model step is retried. */
  serverError({ status = 503 }: { status?: number } = {}): ScriptStep {
    if (!Number.isInteger(status) || status < 500 || status > 599) throw new Error(`script.serverError: status must be 5xx, got ${status}`);
    return { kind: 'serverError', status };
  },
  /** The stream breaks (the connection is reset) after `chunks` text chunks went out; the step is not replayed. */
  cutAfter(chunks: number): ScriptStep {
    if (!Number.isInteger(chunks) || chunks < 1)
      throw new Error(`script.cutAfter: chunks must be a whole number of at least 1, got ${chunks}`);
    return { kind: 'cutAfter', chunks };
  },
  /** The model asks for `tool` with arguments that are not JSON; the boundary refuses the call (invalid_arguments). */
  malformedToolCall(tool: string, json = '{"unterminated": '): ScriptStep {
    return { kind: 'malformedToolCall', tool, json };
  },
};

/** How a step reads in a report: `call book_room {"room":"A"}`, `429 (retry after 2000 ms)`. */
export function describeStep(step: ScriptStep): string {
  switch (step.kind) {
    case 'toolCall':
      return `call ${step.tool} ${JSON.stringify(step.args)}`;
    case 'text':
      return `text ${JSON.stringify(step.text.length > 60 ? `${step.text.slice(0, 59)}…` : step.text)}`;
    case 'rateLimited':
      return `429 (retry after ${step.retryAfterMs} ms)`;
    case 'serverError':
      return `${step.status} server error`;
    case 'cutAfter':
      return `stream cut after ${step.chunks} chunk(s)`;
    case 'malformedToolCall':
      return `call ${step.tool} with malformed JSON ${JSON.stringify(step.json)}`;
  }
}

/** The fake provider's HTTP answer for a step, in the OpenAI Chat Completions wire format. */
export function replyFor(step: ScriptStep): FakeReply {
  switch (step.kind) {
    case 'toolCall':
      return { kind: 'stream', events: openaiStream.toolCall(step.tool, [JSON.stringify(step.args ?? {})]) };
    case 'text':
      return { kind: 'stream', events: openaiStream.text(step.text.match(/\S+\s*|\s+/g) ?? ['']) };
    case 'rateLimited':
      return {
        kind: 'error',
        status: 429,
        headers: { 'retry-after': String(step.retryAfterMs / 1000) },
        body: { error: { message: 'Rate limit reached (scripted)', type: 'rate_limit_error' } },
      };
    case 'serverError':
      return {
        kind: 'error',
        status: step.status,
        body: { error: { message: 'The server had an error (scripted)', type: 'server_error' } },
      };
    case 'cutAfter': {
      const pieces = Array.from({ length: step.chunks + 2 }, (_, index) => `chunk${index + 1} `);
      // The first event opens the message without text; the next `chunks` events carry one text chunk each.
      return { kind: 'stream', events: openaiStream.text(pieces), resetAfter: step.chunks + 1 };
    }
    case 'malformedToolCall':
      return { kind: 'stream', events: openaiStream.toolCall(step.tool, [step.json]) };
  }
}

/** Checks a script given to the kit, naming the first step that is not one of the builders' steps. */
export function checkScript(steps: unknown, where: string): ScriptStep[] {
  if (!Array.isArray(steps)) throw new Error(`${where}: the script must be an array of script.* steps`);
  const kinds = ['toolCall', 'text', 'rateLimited', 'serverError', 'cutAfter', 'malformedToolCall'];
  steps.forEach((step, index) => {
    if (!step || typeof step !== 'object' || !kinds.includes((step as { kind?: unknown }).kind as string)) {
      throw new Error(`${where}: step ${index + 1} is not a script step (build steps with script.toolCall, script.text, …)`);
    }
  });
  return steps as ScriptStep[];
}
