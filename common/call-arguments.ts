import { ARGUMENTS_BY_REFERENCE } from './defaults';

/**
 * What a turn keeps of a call's large arguments once the call ran: their digest and size, not
 * their text. Each model step re-sends the turn's messages, so arguments kept whole (a 100 KB draft,
 * say) would make the history grow with the square of the steps and could push one step's input
 * past Temporal's 2 MB payload limit. The call itself ran with its whole arguments; its own
 * activity input and the turn's tool events still record them once.
 */
export interface ArgumentsReference {
  $ref: 'args';
  /** The canonical digest of the arguments (the one approvals name). */
  argsDigest: string;
  /** Characters of the arguments' JSON. */
  chars: number;
}

/** Whether a kept call's arguments are a reference rather than the arguments themselves. */
export function isArgumentsReference(args: unknown): args is ArgumentsReference {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return false;
  const { $ref, argsDigest, chars } = args as Record<string, unknown>;
  return $ref === 'args' && typeof argsDigest === 'string' && typeof chars === 'number';
}

function hasLongString(value: unknown, limit: number): boolean {
  if (typeof value === 'string') return value.length > limit;
  if (Array.isArray(value)) return value.some((item) => hasLongString(item, limit));
  if (value && typeof value === 'object') return Object.values(value).some((item) => hasLongString(item, limit));
  return false;
}

/**
 * A call's arguments as the turn keeps them in its messages: unchanged when small, else a
 * reference (when any string in them is longer than `stringChars`, or their JSON than `jsonChars`).
 */
export function keptArguments(
  args: unknown,
  argsDigest: string,
  bounds: { stringChars: number; jsonChars: number } = ARGUMENTS_BY_REFERENCE,
): unknown {
  const chars = (JSON.stringify(args) ?? '').length;
  if (chars <= bounds.jsonChars && !hasLongString(args, bounds.stringChars)) return args;
  return { $ref: 'args', argsDigest, chars } satisfies ArgumentsReference;
}

/** How the model reads a reference in its prompt: the call ran; its arguments are left out, with their size and digest. */
export function describeReference(callId: string, reference: ArgumentsReference): string {
  return `[arguments of call ${callId}: ${reference.chars.toLocaleString('en-US')} characters, digest ${reference.argsDigest}, omitted]`;
}
