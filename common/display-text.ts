// What a person is shown of text and arguments that came from a model or a tool call, in every
// surface that shows them (the terminal, the web inbox, the Web UI's details): one set of rules, so
// that no surface shows a recipient, a body or a field name other than the one the call carries.

/**
 * Characters that act on what shows or print as nothing, so that what a person reads is not what a
 * call carries: C0 controls but newline and tab (ESC, carriage return, backspace, bell…), DEL and the
 * C1 controls (CSI, OSC…), every format character (`\p{Cf}`: zero-width space, joiner and non-joiner,
 * word joiner, soft hyphen, byte order mark, the bidi embeddings, overrides, isolates and marks, the
 * tag characters U+E0001 and U+E0020–U+E007F), lone surrogates, the line and paragraph separators, the unassigned rest
 * of the tag block (U+E0000–U+E007F), the variation selectors (U+180B–U+180F, U+FE00–U+FE0F,
 * U+E0100–U+E01EF, which can carry hidden bytes) and the blank fillers (combining grapheme joiner,
 * Hangul fillers, Khmer invisible vowels).
 */
export const HIDDEN_CHARACTER_PATTERN =
  '(?![\\n\\t])(?:[\\p{Cc}\\p{Cf}\\p{Cs}\\p{Zl}\\p{Zp}\\u115f\\u1160\\u3164\\uffa0\\u{E0000}-\\u{E007F}]|\\p{Variation_Selector}|\\u034f|\\u17b4|\\u17b5|\\u180f)';

/** The pattern as a fresh global regular expression (a shared one would carry `lastIndex` between callers). */
function hiddenCharacters(): RegExp {
  return new RegExp(HIDDEN_CHARACTER_PATTERN, 'gu');
}

/** The kinds of hidden characters a warning names. */
export type HiddenKind = 'bidi' | 'tag' | 'invisible' | 'control';

/** What kind of hidden character a code point is (only asked of characters the pattern matched). */
export function hiddenKind(codePoint: number): HiddenKind {
  if (codePoint >= 0xe0000 && codePoint <= 0xe007f) return 'tag';
  if (
    (codePoint >= 0x202a && codePoint <= 0x202e) ||
    (codePoint >= 0x2066 && codePoint <= 0x2069) ||
    codePoint === 0x200e ||
    codePoint === 0x200f ||
    codePoint === 0x061c
  )
    return 'bidi';
  if (codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f)) return 'control';
  return 'invisible';
}

/** How one hidden character is shown: `\u{202E}`, the same in the terminal, the web inbox and the Web UI. */
export function markOf(codePoint: number): string {
  return `\\u{${codePoint.toString(16).toUpperCase()}}`;
}

/** A hidden character as it is shown: its mark and its code point. */
export interface DisplayMark {
  mark: string;
  codePoint: number;
}

/** A piece of text as it is shown: runs of plain text, and each hidden character as a mark. */
export type DisplayPart = string | DisplayMark;

/** How many hidden characters of each kind something holds. */
export type HiddenCount = Record<HiddenKind, number> & { total: number };

function noneHidden(): HiddenCount {
  return { total: 0, bidi: 0, tag: 0, invisible: 0, control: 0 };
}

/**
 * Text made safe to show: every character that acts on the display or prints as nothing is shown as
 * its mark (an escape sequence becomes `\u{1B}[2K`, a right-to-left override `\u{202E}`, a
 * zero-width space `\u{200B}`), so nothing shown can move a terminal's cursor, reorder a line or
 * hide text in it.
 */
export function displayText(text: string): string {
  return text.replace(hiddenCharacters(), (character) => markOf(character.codePointAt(0)!));
}

/** Text as parts, each hidden character a mark, counted into `hidden`. */
export function displayParts(text: string, hidden: HiddenCount = noneHidden()): DisplayPart[] {
  const parts: DisplayPart[] = [];
  let from = 0;
  for (const match of text.matchAll(hiddenCharacters())) {
    if (match.index > from) parts.push(text.slice(from, match.index));
    const codePoint = match[0].codePointAt(0)!;
    parts.push({ mark: markOf(codePoint), codePoint });
    hidden.total++;
    hidden[hiddenKind(codePoint)]++;
    from = match.index + match[0].length;
  }
  if (from < text.length) parts.push(text.slice(from));
  return parts;
}

/** The text the parts stand for: what a call carries. */
export function partsText(parts: DisplayPart[]): string {
  return parts.map((part) => (typeof part === 'string' ? part : String.fromCodePoint(part.codePoint))).join('');
}

/**
 * One value of a call's arguments as it is shown: `json` is shown whole as JSON text (scalars, and
 * objects and lists short enough); `text` is a long string shown as it is; `list` and `fields` are
 * shown entry by entry. A `fold` names a part shown folded: a person must unfold it before the call
 * may be approved. `too_deep` is a part nested deeper than is shown: such a call cannot be approved
 * from the view.
 */
export type DisplayNode =
  | { kind: 'json'; parts: DisplayPart[]; inline: boolean }
  | { kind: 'text'; parts: DisplayPart[]; length: number; fold: string }
  | { kind: 'list'; items: DisplayNode[]; fold?: string }
  | { kind: 'fields'; fields: Array<{ key: DisplayPart[]; value: DisplayNode }>; fold?: string }
  | { kind: 'too_deep'; depth: number };

/** A call's arguments as they are shown, with what a person must do and know before approving them. */
export interface ValueDisplay {
  root: DisplayNode;
  /** The hidden characters the arguments hold (keys and values), shown as marks. */
  hidden: HiddenCount;
  /** The parts shown folded; each must be unfolded before the call may be approved from the view. */
  folds: string[];
  /** False when a part is nested deeper than is shown (then the view cannot approve the call). */
  complete: boolean;
}

/** Strings longer than this, or with a line break, are shown folded, as text. */
export const FOLDED_TEXT_CHARS = 160;
/** Objects and lists whose compact JSON is at most this long are shown whole as JSON. */
export const INLINE_JSON_CHARS = 240;
/** Objects and lists with more entries than this are shown folded. */
export const FOLDED_ENTRIES = 8;
/** Arguments nested deeper than this are not shown (the view then cannot approve them). */
export const SHOWN_DEPTH = 64;

/** A JSON Pointer token (RFC 6901), so that each fold has a stable name. */
function pointerToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * A call's arguments as every surface shows them: hidden characters in keys and values marked and
 * counted, long strings and large objects folded (each fold named by its JSON Pointer), at most
 * `maxDepth` levels (deeper: `too_deep`, never a stack overflow). `partsText`, applied part by part,
 * gives back exactly the arguments, so a digest of what is shown is the digest of what runs.
 */
export function displayValue(value: unknown, { maxDepth = SHOWN_DEPTH }: { maxDepth?: number } = {}): ValueDisplay {
  const hidden = noneHidden();
  const folds: string[] = [];
  let complete = true;
  /** The node of a value and the length of its compact JSON (Infinity for a part that must stay structured). */
  const build = (item: unknown, pointer: string, depth: number): { node: DisplayNode; length: number } => {
    if (item === null || typeof item !== 'object') {
      const json = JSON.stringify(item) ?? 'null';
      if (typeof item !== 'string') return { node: { kind: 'json', parts: displayParts(json), inline: true }, length: json.length };
      // Counted on the string itself: its JSON already writes the C0 controls as visible escapes.
      const parts = displayParts(item, hidden);
      if (item.length > FOLDED_TEXT_CHARS || item.includes('\n')) {
        folds.push(pointer);
        return { node: { kind: 'text', parts, length: item.length, fold: pointer }, length: Infinity };
      }
      return { node: { kind: 'json', parts: displayParts(json), inline: true }, length: json.length };
    }
    if (depth >= maxDepth) {
      complete = false;
      return { node: { kind: 'too_deep', depth }, length: Infinity };
    }
    const entries: Array<[string, unknown]> = Array.isArray(item)
      ? item.map((entry, index) => [String(index), entry])
      : Object.entries(item).filter(([, entry]) => entry !== undefined);
    // Built before the JSON of this level is measured, so nothing deeper than the cap is ever stringified.
    const built = entries.map(([key, entry]) => ({
      key,
      keyParts: Array.isArray(item) ? [key] : displayParts(key, hidden),
      ...build(entry, `${pointer}/${pointerToken(key)}`, depth + 1),
    }));
    const length =
      2 +
      Math.max(0, built.length - 1) +
      built.reduce((sum, entry) => sum + entry.length + (Array.isArray(item) ? 0 : JSON.stringify(entry.key).length + 1), 0);
    if (length <= INLINE_JSON_CHARS) {
      // The entries' hidden characters were counted as they were built; the JSON's are the same ones.
      return { node: { kind: 'json', parts: displayParts(JSON.stringify(item, null, 2)), inline: false }, length };
    }
    const fold = built.length > FOLDED_ENTRIES ? pointer : undefined;
    if (fold !== undefined) folds.push(fold);
    const node: DisplayNode = Array.isArray(item)
      ? { kind: 'list', items: built.map((entry) => entry.node), ...(fold !== undefined ? { fold } : {}) }
      : {
          kind: 'fields',
          fields: built.map((entry) => ({ key: entry.keyParts, value: entry.node })),
          ...(fold !== undefined ? { fold } : {}),
        };
    return { node, length: Infinity };
  };
  const { node } = build(value, '', 0);
  return { root: node, hidden, folds: folds.filter((fold, index) => folds.indexOf(fold) === index), complete };
}

/** The value a display node stands for: what the view showed, part by part (undefined for a part too deep to show). */
export function valueOfDisplay(node: DisplayNode): unknown {
  switch (node.kind) {
    case 'json':
      return JSON.parse(partsText(node.parts));
    case 'text':
      return partsText(node.parts);
    case 'list':
      return node.items.map(valueOfDisplay);
    case 'fields':
      return Object.fromEntries(node.fields.map((field) => [partsText(field.key), valueOfDisplay(field.value)]));
    case 'too_deep':
      return undefined;
  }
}

const KIND_WORDS: Record<HiddenKind, [string, string]> = {
  bidi: ['bidi control (reorders text)', 'bidi controls (reorder text)'],
  tag: ['tag character (invisible text)', 'tag characters (invisible text)'],
  invisible: ['invisible character', 'invisible characters'],
  control: ['control character', 'control characters'],
};

/** The warning shown with arguments that hold hidden characters, naming how many of each kind; undefined when none. */
export function hiddenWarning(hidden: HiddenCount): string | undefined {
  if (hidden.total === 0) return undefined;
  const kinds = (Object.keys(KIND_WORDS) as HiddenKind[])
    .filter((kind) => hidden[kind] > 0)
    .map((kind) => `${hidden[kind]} ${KIND_WORDS[kind][hidden[kind] === 1 ? 0 : 1]}`);
  return (
    `Warning: these arguments hold ${hidden.total} hidden character${hidden.total === 1 ? '' : 's'} (${kinds.join(', ')}), ` +
    'shown as \\u{…}. The call carries them exactly as marked, whatever the text seems to say.'
  );
}

/**
 * The arguments as JSON a person may edit: every hidden character written as a JSON escape
 * (`\u202e`, a tag character as its two surrogate escapes), so the text shows all it holds and
 * parses back to exactly the same value.
 */
export function editableJson(value: unknown): string {
  return (JSON.stringify(value, null, 2) ?? 'null').replace(hiddenCharacters(), (character) =>
    [...Array(character.length).keys()].map((index) => `\\u${character.charCodeAt(index).toString(16).padStart(4, '0')}`).join(''),
  );
}
