import type { TurnMessage } from './contract/conversation';

/**
 * A tool result the turn's later model steps are sent by reference: the call's activity kept it
 * once in the store every worker of the task queue shares, and the model step reads it back. Each
 * model step re-sends the turn's messages, so results sent whole would make the history grow with
 * the square of the steps; by reference each is recorded once, in its call's own activity result.
 */
export interface ResultReference {
  $ref: 'result';
  /** SHA-256 of the result's JSON (hex), checked when it is read back; kept under `<workflow id>/<call id>/<digest>`. */
  digest: string;
  /** Characters of the result's JSON. */
  chars: number;
}

/** Results whose JSON is longer than this are kept by reference; shorter ones cost less than their reference. */
export const RESULT_BY_REFERENCE_CHARS = 1_024;

/** A message a model step is sent: a turn's message, or a tool message whose result is kept by reference. */
export type StepMessage = TurnMessage | { role: 'tool'; callId: string; tool: string; result: ResultReference };

/** Whether a tool message's result is a reference rather than the result itself. */
export function isResultReference(result: unknown): result is ResultReference {
  if (!result || typeof result !== 'object' || Array.isArray(result)) return false;
  const { $ref, digest, chars } = result as Record<string, unknown>;
  return $ref === 'result' && typeof digest === 'string' && typeof chars === 'number';
}

/**
 * The messages a model step was sent, kept once by that step: the next step is sent only the
 * messages added since, with this reference, so no step records the turn's earlier messages again.
 */
export interface TranscriptReference {
  /** How many messages the kept transcript holds (the first `count` of the turn's messages). */
  count: number;
  /** SHA-256 of the transcript's JSON (hex); kept under `<workflow id>/transcript/<count>/<digest>`. */
  digest: string;
}
