/**
 * Characters a terminal would act on or that print as nothing, so that what a person reads is not
 * what a call carries: C0 controls but newline and tab (ESC, carriage return, backspace, bell…),
 * DEL and the C1 controls (CSI, OSC…), every format character (`\p{Cf}`: zero-width space, joiner
 * and non-joiner, word joiner, soft hyphen, byte order mark, the bidi embeddings, overrides,
 * isolates and marks, the tag characters U+E0001 and U+E0020–U+E007F), the line and paragraph
 * separators, the unassigned rest of the tag block (U+E0000–U+E007F), the variation selectors
 * (U+180B–U+180F, U+FE00–U+FE0F, U+E0100–U+E01EF, which can carry hidden bytes) and the blank fillers
 * (combining grapheme joiner, Hangul fillers, Khmer invisible vowels).
 */
const UNSAFE =
  /(?![\n\t])(?:[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0\u{E0000}-\u{E007F}]|\p{Variation_Selector}|\u034f|\u17b4|\u17b5|\u180f)/gu;

/**
 * Text from a model or a tool call, made safe to print: every character a terminal would act on,
 * and every one that prints as nothing, is shown as `\u{…}` (an escape sequence becomes
 * `\u{1B}[2K`, a right-to-left override `\u{202E}`, a zero-width space `\u{200B}`), so nothing
 * printed can move the cursor, erase a line, reorder what an approval prompt shows or hide text in it.
 */
export function forTerminal(text: string): string {
  return text.replace(UNSAFE, (character) => `\\u{${character.codePointAt(0)!.toString(16).toUpperCase()}}`);
}
