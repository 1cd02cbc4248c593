/**
 * Regular expressions from outside (JSON Schema `pattern`s of MCP servers, rules written by
 * others) compiled to a linear-time engine (RE2, as re2js), so no pattern can backtrack
 * exponentially on the event loop. A pattern that needs backtracking to mean what it says
 * (backreferences, lookahead, lookbehind) is refused with an error naming it.
 *
 * Linear time is not yet bounded time: RE2 may fall back to simulating every instruction of its
 * program for every character, about 100 ns per instruction and character at worst. Every match
 * is charged `program size × input length` against a budget (one per {@link withRegexBudget}
 * scope, or {@link DEFAULT_REGEX_BUDGET} for a lone match); a match that would pass it is not run
 * and counts as not matching, and the scope reports that its budget ran out.
 */
import { RE2JS } from 're2js';
import { TollgateError } from '../common/tollgate-error';

/** Instructions × characters one scope may spend: at about 100 ns each at worst, a few hundred milliseconds. */
export const DEFAULT_REGEX_BUDGET = 3_000_000;

/** How much of a pattern an error message shows. */
const SHOWN_PATTERN_CHARS = 120;

/** The marker (global registry, so that it survives package copies) of {@link UnsupportedRegexError}. */
/** A pattern that cannot be matched in linear time, or that RE2 does not accept; `pattern` is the pattern as given. */
export class UnsupportedRegexError extends TollgateError {
  static override readonly marker = 'tollgate.error.UnsupportedRegexError';
  readonly pattern: string;

  constructor({ pattern, reason }: { pattern: string; reason: string }) {
    super(`the pattern ${showPattern(pattern)} ${reason}`);
    this.name = 'UnsupportedRegexError';
    this.pattern = pattern;
  }
}

/** A pattern quoted for a message, cut when long. */
function showPattern(pattern: string): string {
  const quoted = JSON.stringify(pattern);
  return quoted.length > SHOWN_PATTERN_CHARS ? `${quoted.slice(0, SHOWN_PATTERN_CHARS - 2)}…"` : quoted;
}

/**
 * The first construct of the pattern that needs backtracking (a backreference or a lookaround),
 * with its position, or undefined. Found by scanning the pattern's syntax, because re2js would
 * otherwise read `\k<name>` as the literal text `k<name>`.
 */
function backtrackingConstruct(pattern: string): string | undefined {
  let inClass = false;
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index];
    if (char === '\\') {
      const next = pattern[index + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return `a backreference (\\${next} at ${index})`;
      if (!inClass && next === 'k' && pattern[index + 2] === '<') return `a named backreference (\\k<…> at ${index})`;
      index++;
      continue;
    }
    if (inClass) {
      if (char === ']') inClass = false;
      continue;
    }
    if (char === '[') {
      inClass = true;
      continue;
    }
    if (char !== '(' || pattern[index + 1] !== '?') continue;
    const after = pattern.slice(index + 2, index + 4);
    if (after[0] === '=' || after[0] === '!') return `a lookahead ((?${after[0]} at ${index})`;
    if (after === '<=' || after === '<!') return `a lookbehind ((?${after} at ${index})`;
  }
  return undefined;
}

/** The RE2 flags of JavaScript flags; `g`, `y`, `u`, `v` and `d` change nothing about whether a text matches. */
function re2Flags(pattern: string, flags: string): number {
  let re2 = 0;
  for (const flag of flags) {
    if (flag === 'i') re2 |= RE2JS.CASE_INSENSITIVE;
    else if (flag === 'm') re2 |= RE2JS.MULTILINE;
    else if (flag === 's') re2 |= RE2JS.DOTALL;
    else if (!'guyvd'.includes(flag)) throw new UnsupportedRegexError({ pattern, reason: `has the unknown flag "${flag}"` });
  }
  return re2;
}

/** The work left in the current {@link withRegexBudget} scope. */
interface Budget {
  remaining: number;
  exhausted: boolean;
}

let scope: Budget | undefined;

/**
 * Runs `run` (synchronous, as a JSON Schema validation is) with one budget of matching work for
 * every linear regex it tests; says whether any match was skipped because the budget ran out.
 */
export function withRegexBudget<T>(run: () => T, budget = DEFAULT_REGEX_BUDGET): { value: T; exhausted: boolean } {
  const outer = scope;
  const own: Budget = { remaining: budget, exhausted: false };
  scope = own;
  try {
    return { value: run(), exhausted: own.exhausted };
  } finally {
    scope = outer;
  }
}

/** A compiled untrusted pattern: `test` searches anywhere in the text (as `RegExp.prototype.test` does), in linear time. */
export interface LinearRegex {
  /** The pattern as given. */
  readonly source: string;
  /** The size of RE2's program for it: what one character of input costs at most. */
  readonly programSize: number;
  /** Whether the pattern occurs in `input`; false, without matching, when the budget cannot pay for it. */
  test(input: string): boolean;
  /** What a match against `input` costs against the budget. */
  cost(input: string): number;
  toString(): string;
}

/**
 * Compiles an untrusted JavaScript pattern (as JSON Schema's ECMA-262 dialect writes it) to RE2.
 * Throws {@link UnsupportedRegexError} naming the pattern when it uses a backreference or a
 * lookaround, or anything else RE2 refuses (such as a repeat count above 1000). Two edges differ
 * from JavaScript: `\s` and `.` treat the rarer Unicode spaces and line ends (U+2028, `\r` for
 * `.`) as RE2 does.
 */
export function compileLinearRegex(pattern: string, flags = 'u'): LinearRegex {
  const construct = backtrackingConstruct(pattern);
  if (construct) throw new UnsupportedRegexError({ pattern, reason: `uses ${construct}, which cannot be matched in linear time` });
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern), re2Flags(pattern, flags));
  } catch (error) {
    if (UnsupportedRegexError.isInstance(error)) throw error;
    const reason = error instanceof Error ? error.message.replace(/^error parsing regexp: /, '') : String(error);
    throw new UnsupportedRegexError({ pattern, reason: `is not one the linear-time engine accepts: ${reason}` });
  }
  const programSize = compiled.programSize();
  const cost = (input: string) => (programSize + 1) * (input.length + 1);
  return {
    source: pattern,
    programSize,
    cost,
    test(input: string): boolean {
      const budget = scope ?? { remaining: DEFAULT_REGEX_BUDGET, exhausted: false };
      const price = cost(input);
      if (price > budget.remaining) {
        budget.exhausted = true;
        return false;
      }
      budget.remaining -= price;
      return compiled.test(input);
    },
    toString: () => `/${pattern}/${flags}`,
  };
}

/** ajv's `code.regExp` engine: every `pattern` and `patternProperties` of a schema compiled by {@link compileLinearRegex}. */
export const linearRegExpEngine = Object.assign((pattern: string, flags: string) => compileLinearRegex(pattern, flags), {
  // ajv reads `code` only to write standalone validation code, which this project never generates.
  code: 'linearRegExpEngine',
});

/**
 * The ajv options that keep schemas from outside linear: the regex engine above for `pattern`
 * and `patternProperties`, and no strict-mode check of property names against patterns (which
 * ajv runs with native regular expressions while compiling).
 */
export const LINEAR_REGEX_AJV_OPTIONS = {
  code: { regExp: linearRegExpEngine },
  unicodeRegExp: true,
  allowMatchingProperties: true,
} as const;
