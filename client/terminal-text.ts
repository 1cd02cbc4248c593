import { displayText } from '../common/display-text';

/**
 * Text from a model or a tool call, made safe to print: every character a terminal would act on,
 * and every one that prints as nothing, is shown as `\u{…}` (an escape sequence becomes
 * `\u{1B}[2K`, a right-to-left override `\u{202E}`, a zero-width space `\u{200B}`), so nothing
 * printed can move the cursor, erase a line, reorder what an approval prompt shows or hide text in
 * it. The rules are those of every surface that shows a call (`common/display-text.ts`).
 */
export function forTerminal(text: string): string {
  return displayText(text);
}
