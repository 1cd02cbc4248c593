import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileLinearRegex,
  DEFAULT_REGEX_BUDGET,
  LINEAR_REGEX_AJV_OPTIONS,
  UnsupportedRegexError,
  withRegexBudget,
} from '../../hardened/linear-regex';
import { compileOutsideSchema } from '../../tools/json-schema/outside-schema';
import { eventLoopProbe } from '../helpers/event-loop-probe';

/** The longest the event loop may stall: generous, about liveness; a backtracking engine stalls it for seconds on these inputs. */
const MAX_STALL_MS = 500;

/** Runs `work` and says how long the event loop was blocked at most, with a timer tick after it so the probe sees the stall. */
async function stallOf(work: () => void): Promise<number> {
  const probe = eventLoopProbe();
  await new Promise((resolve) => setTimeout(resolve, 60));
  work();
  await new Promise((resolve) => setTimeout(resolve, 120));
  return probe.stop();
}

describe('compileLinearRegex', () => {
  it('matches the backtracking pattern of the review on hostile input without stalling, and agrees with RegExp where that is quick', async () => {
    const pattern = compileLinearRegex('^([a-z0-9]+-?)+$');
    let results: boolean[] = [];
    const stall = await stallOf(() => {
      results = [29, 1_000, 100_000].map((length) => pattern.test(`${'a'.repeat(length)}!`));
    });
    expect(stall).toBeLessThan(MAX_STALL_MS);
    expect(results).toEqual([false, false, false]);
    expect(pattern.test('abc-def-1')).toBe(true);
    expect(pattern.test('Abc')).toBe(false);
  });

  it('gives the answers of JavaScript RegExp on patterns both accept (search, not anchored, Unicode)', () => {
    const cases: Array<[string, string, string[]]> = [
      ['^[0-9]+$', 'u', ['42', '4x2', '']],
      ['b', 'u', ['abc', 'xyz']],
      ['^\\p{L}+$', 'u', ['héllo', 'a1']],
      ['^.$', 'u', ['😀', 'ab']],
      ['(?<year>\\d{4})-\\d{2}', 'u', ['2024-05', '24-05']],
      ['^abc$', 'i', ['ABC', 'abcd']],
      ['x\\/y', 'u', ['x/y', 'xy']],
    ];
    for (const [source, flags, inputs] of cases) {
      const linear = compileLinearRegex(source, flags);
      const native = new RegExp(source, flags);
      for (const input of inputs) expect(linear.test(input), `${source} on ${input}`).toBe(native.test(input));
    }
  });

  it('agrees with RegExp on generated texts for a set of plain patterns', () => {
    const patterns = ['^[a-c]+$', 'a.c', '^(ab|ba)*$', '[0-9]{2,3}', '^a?b+c*$'];
    fc.assert(
      fc.property(fc.constantFrom(...patterns), fc.stringMatching(/^[abc0-9.]{0,12}$/), (source, input) => {
        expect(compileLinearRegex(source).test(input)).toBe(new RegExp(source, 'u').test(input));
      }),
    );
  });

  it('refuses backreferences and lookaround with an error naming the pattern and the construct', () => {
    const refused: Array<[string, RegExp]> = [
      ['(a)\\1', /^the pattern "\(a\)\\\\1" uses a backreference \(\\1 at 3\), which cannot be matched in linear time$/],
      ['(?<n>a)\\k<n>', /uses a named backreference \(\\k<…> at 7\)/],
      ['a(?=b)', /uses a lookahead \(\(\?= at 1\)/],
      ['a(?!b)', /uses a lookahead \(\(\?! at 1\)/],
      ['(?<=a)b', /uses a lookbehind \(\(\?<= at 0\)/],
      ['(?<!a)b', /uses a lookbehind \(\(\?<! at 0\)/],
      ['(a{1000}){1000}', /^the pattern "\(a\{1000\}\)\{1000\}" is not one the linear-time engine accepts: invalid repeat count/],
    ];
    for (const [source, message] of refused) {
      let thrown: unknown;
      try {
        compileLinearRegex(source);
      } catch (error) {
        thrown = error;
      }
      expect(UnsupportedRegexError.isInstance(thrown), source).toBe(true);
      expect((thrown as Error).message).toMatch(message);
      expect((thrown as UnsupportedRegexError).pattern).toBe(source);
    }
    // Escaped or inside a class, the same characters are no backreference.
    expect(compileLinearRegex('[(?=]x').test('(x')).toBe(true);
    expect(compileLinearRegex('\\\\1').test('\\1')).toBe(true);
  });

  it('does not run a match its budget cannot pay for: false, and the scope says the budget ran out', async () => {
    // About 8,000 instructions: RE2 may simulate each of them for every character (tens of seconds on 100,000 characters).
    const heavy = compileLinearRegex('(?:[ab]{0,999}){0,1}a.{0,999}a.{0,999}a.{0,999}$');
    const text = 'ab'.repeat(50_000);
    expect(heavy.cost(text)).toBeGreaterThan(DEFAULT_REGEX_BUDGET);
    let outcome = { value: true, exhausted: false };
    const stall = await stallOf(() => {
      outcome = withRegexBudget(() => heavy.test(text));
    });
    expect(stall).toBeLessThan(MAX_STALL_MS);
    expect(outcome).toEqual({ value: false, exhausted: true });
    // The budget is shared by every match of one scope: many small matches add up to it.
    const light = compileLinearRegex('^[ab]+$');
    const many = withRegexBudget(() => Array.from({ length: 1_000 }, () => light.test(text.slice(0, 2_000))).filter(Boolean).length);
    expect(many.exhausted).toBe(true);
    expect(many.value).toBeLessThan(1_000);
    expect(withRegexBudget(() => light.test('abab'))).toEqual({ value: true, exhausted: false });
  });

  it('is what ajv compiles every pattern and patternProperties with, under LINEAR_REGEX_AJV_OPTIONS', async () => {
    const ajv = new Ajv({ strict: false, ...LINEAR_REGEX_AJV_OPTIONS });
    const validate = ajv.compile({
      type: 'object',
      properties: { slug: { type: 'string', pattern: '^([a-z0-9]+-?)+$' } },
      patternProperties: { '^x-([a-z]+-?)+$': { type: 'number' } },
      additionalProperties: false,
    });
    let results: boolean[] = [];
    const stall = await stallOf(() => {
      results = [validate({ slug: `${'a'.repeat(40)}!` }), validate({ [`x-${'a'.repeat(40)}!`]: 1 }), validate({ slug: 'ok-1', 'x-y': 2 })];
    });
    expect(stall).toBeLessThan(MAX_STALL_MS);
    expect(results).toEqual([false, false, true]);
    expect(() => ajv.compile({ type: 'string', pattern: '(a)\\1' })).toThrow(/uses a backreference/);
  });
});

describe('compileOutsideSchema', () => {
  it('checks uniqueItems over 5,000 objects without the quadratic comparison (the one of ajv takes most of a second), and names the duplicates', async () => {
    const schema = compileOutsideSchema({ type: 'array', uniqueItems: true });
    const items = Array.from({ length: 5_000 }, (_, index) => ({ index, tags: ['a', 'b'] }));
    let unique: ReturnType<typeof schema.check> = { valid: true };
    const stall = await stallOf(() => {
      unique = schema.check(items);
    });
    expect(stall).toBeLessThan(MAX_STALL_MS);
    expect(unique).toEqual({ valid: true });
    const duplicate = schema.check([{ a: 1, b: [2] }, { x: 0 }, { b: [2], a: 1 }]);
    expect(duplicate).toMatchObject({
      valid: false,
      problems: [{ keyword: 'uniqueItems', message: 'must NOT have duplicate items (items ## 0 and 2 are identical)' }],
    });
  });

  it('refuses a schema whose $ref recurses without end at once, and fails a check too deep for a tree schema instead of throwing out of it', () => {
    expect(() =>
      compileOutsideSchema({
        definitions: { loop: { anyOf: [{ $ref: '#/definitions/loop' }, { type: 'string' }] } },
        $ref: '#/definitions/loop',
      }),
    ).toThrow(/^the schema is over its work budget: its references lead back to the same subschema without going into the value/);
    const tree = compileOutsideSchema({
      definitions: { node: { type: 'array', items: { $ref: '#/definitions/node' } } },
      $ref: '#/definitions/node',
    });
    let deep: unknown = [];
    for (let depth = 0; depth < 5_000; depth++) deep = [deep];
    expect(tree.check(deep)).toMatchObject({
      valid: false,
      problems: [{ message: expect.stringMatching(/^could not be checked against the schema: it nests deeper than 1000 levels/) }],
    });
    expect(tree.check([[[]], []])).toEqual({ valid: true });
  });

  it('refuses a schema that references itself at once, and one with a pattern RE2 cannot run, naming the cause', () => {
    expect(() =>
      compileOutsideSchema({
        $defs: { a: { $ref: '#/$defs/a' } },
        $ref: '#/$defs/a',
        $schema: 'https://json-schema.org/draft/2020-12/schema',
      }),
    ).toThrow(/^the schema is over its work budget: its references lead back to the same subschema without going into the value/);
    expect(() => compileOutsideSchema({ type: 'string', pattern: 'a(?=b)' })).toThrow(
      'the schema does not compile: the pattern "a(?=b)" uses a lookahead',
    );
  });

  it('says a value was too long for its pattern rather than that it does not match', () => {
    const schema = compileOutsideSchema({ type: 'object', properties: { note: { type: 'string', pattern: '^[a-z ]+$' } } });
    expect(schema.check({ note: 'a'.repeat(100) })).toEqual({ valid: true });
    const outcome = schema.check({ note: 'a'.repeat(2_000_000) });
    expect(outcome).toMatchObject({ valid: false, problems: [{ instancePath: '/note', keyword: 'pattern' }] });
    expect(outcome.valid === false && outcome.problems[0].message).toMatch(
      /^is 2000000 characters, too long to be checked against the pattern "\^\[a-z \]\+\$" within the matching budget/,
    );
  });
});
