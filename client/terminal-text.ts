/**
 * Characters a terminal would act on instead of showing: C0 controls but newline and tab (ESC,
 * carriage return, backspace, bell…), DEL, C1 controls (CSI, OSC…) and the Unicode bidi controls
 * (embeddings, overrides, isolates, the marks LRM, RLM and ALM).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is what this pattern is for.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text from a model or a tool call, made safe to print: every character a terminal would act on is
 * shown as `\u{…}` (an escape sequence becomes `\u{1B}[2K`, a right-to-left override `\u{202E}`),
 * so nothing printed can move the cursor, erase a line or reorder what an approval prompt shows.
 */
export function forTerminal(text: string): string {
  return text.replace(UNSAFE, (character) => `\\u{${character.codePointAt(0)!.toString(16).toUpperCase()}}`);
}
