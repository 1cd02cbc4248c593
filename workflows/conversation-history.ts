// The size bounds of a conversation's history, measured as Temporal encodes payloads: the UTF-8
// bytes of their JSON. Pure and deterministic, so the conversation workflow computes them on replay.
import type { TurnMessage } from '../common/contract/conversation';

/** The UTF-8 length of a string, as TextEncoder encodes it (a lone surrogate as the 3 bytes of U+FFFD). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** The bytes of a value as Temporal's JSON payload converter encodes it: its JSON (escapes included) in UTF-8. */
export function jsonBytes(value: unknown): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : utf8Bytes(json);
}

/** The longest start of `text` whose JSON string is at most `maxBytes`, never ending inside a surrogate pair. */
function prefixWithin(text: string, maxBytes: number): string {
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (jsonBytes(text.slice(0, middle)) <= maxBytes) low = middle;
    else high = middle - 1;
  }
  const code = text.charCodeAt(low - 1);
  return code >= 0xd800 && code <= 0xdbff ? text.slice(0, low - 1) : text.slice(0, low);
}

/** A string cut so that its JSON takes at most `maxBytes`, with a marker saying how much was kept. */
function cutText(text: string, maxBytes: number, boundBytes: number): string {
  const marker = (kept: number) =>
    `…[cut short: ${kept} of ${text.length} characters kept, the message was over the ${boundBytes}-byte bound of one message]`;
  const room = Math.max(0, maxBytes - jsonBytes(marker(text.length)));
  const kept = prefixWithin(text, room);
  return `${kept}${marker(kept.length)}`;
}

/**
 * A message whose JSON takes at most `maxBytes`: as it is when it fits; else the text of a user or
 * assistant message cut short with a marker (an assistant's tool calls left out), and any other
 * message replaced by a user message saying what was left out.
 */
export function cutMessage(message: TurnMessage, maxBytes: number): TurnMessage {
  const size = jsonBytes(message);
  if (size <= maxBytes) return message;
  if (message && message.role === 'user' && typeof message.content === 'string') {
    const room = maxBytes - jsonBytes({ ...message, content: '' });
    return { ...message, content: cutText(message.content, room, maxBytes) };
  }
  if (message && message.role === 'assistant' && typeof message.text === 'string') {
    const room = maxBytes - jsonBytes({ ...message, text: '', toolCalls: [] });
    return { ...message, text: cutText(message.text, room, maxBytes), toolCalls: [] };
  }
  return { role: 'user', content: `[a message of ${size} bytes was left out here: over the ${maxBytes}-byte bound of one message]` };
}

/** A history that fits a budget, and how many of its oldest messages were dropped for it. */
export interface FittedHistory {
  history: TurnMessage[];
  dropped: number;
}

/**
 * The newest messages of a history whose JSON takes at most `budgetBytes`, each cut to
 * `messageBytes` first; the oldest are dropped (and counted), and so is an answer left without its
 * question at the start, so that the history still begins with a user message.
 */
export function fitHistory({
  history,
  budgetBytes,
  messageBytes,
}: {
  history: readonly TurnMessage[];
  budgetBytes: number;
  messageBytes: number;
}): FittedHistory {
  const messages = history.map((message) => cutMessage(message, messageBytes));
  const sizes = messages.map((message) => jsonBytes(message));
  // The JSON of a list: its brackets, and a comma between two messages.
  let total = 2 + sizes.reduce((sum, size) => sum + size, 0) + Math.max(0, messages.length - 1);
  let start = 0;
  const drop = () => {
    total -= sizes[start]! + (messages.length - start > 1 ? 1 : 0);
    start++;
  };
  while (start < messages.length && total > budgetBytes) drop();
  while (start < messages.length && messages[start]?.role !== 'user') drop();
  return { history: messages.slice(start), dropped: start };
}

/** What the model is told in place of earlier messages that a turn is not given. */
export function leftOutMarker(count: number): TurnMessage {
  return {
    role: 'user',
    content: `[${count} earlier message${count === 1 ? '' : 's'} of this conversation ${count === 1 ? 'is' : 'are'} left out here, to keep what a turn is given within its size bounds; ask the user to repeat anything you need from ${count === 1 ? 'it' : 'them'}]`,
  };
}
