// Canonical JSON (what every argument digest and definition digest is computed over) of ordinary and hostile values.
import { describe, expect, it } from 'vitest';
import { canonicalJson, deepJson } from '../../common/canonical-json';
import { truncateOutput } from '../../activities/boundary/run-handler';
import { argsDigest } from '../../tools/canonical-json';
import { deepObject, nestedArrays } from '../helpers/schema-probes';

describe('canonicalJson', () => {
  it('sorts keys at every level and writes what JSON writes otherwise', () => {
    expect(canonicalJson({ b: 1, a: [true, null, { d: 'x', c: undefined }], '': 0 })).toBe('{"":0,"a":[true,null,{"d":"x"}],"b":1}');
    expect(canonicalJson([undefined, () => 1, Number.NaN, 'a"\\u2028'])).toBe('[null,null,null,"a\\"\\\\u2028"]');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson('text')).toBe('"text"');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson([[]])).toBe('[[]]');
    // The same digest whatever the key order: what an approval names does not depend on how the model wrote it.
    expect(argsDigest({ to: 'a', body: { x: 1, y: [2] } })).toBe(argsDigest({ body: { y: [2], x: 1 }, to: 'a' }));
  });

  it('writes values nested 100,000 levels deep, where a recursive writer overflowed its stack', () => {
    const objects = canonicalJson(deepObject(100_000));
    expect(objects).toBe(`${'{"next":'.repeat(100_000)}"bottom"${'}'.repeat(100_000)}`);
    expect(canonicalJson(nestedArrays(100_000))).toBe(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    // The platform's writer as a witness where every supported Node.js can run it (22 overflows near 4,500 levels).
    expect(canonicalJson(deepObject(1_000))).toBe(JSON.stringify(deepObject(1_000)));
  });

  it('deepJson writes keys in their own order as JSON.stringify does, at depths JSON.stringify cannot reach on Node.js 22', () => {
    const ordinary = { z: 1, a: [true, null, 'x'], m: { y: 2, b: undefined } };
    expect(deepJson(ordinary)).toBe(JSON.stringify(ordinary));
    expect(deepJson(deepObject(100_000))).toBe(`${'{"next":'.repeat(100_000)}"bottom"${'}'.repeat(100_000)}`);
  });

  it("a tool's answer too deep for the platform's writer goes on as its JSON text, cut to the bound", () => {
    const text = `${'{"next":'.repeat(100_000)}"bottom"${'}'.repeat(100_000)}`;
    const whole = truncateOutput(deepObject(100_000), 10_000_000);
    expect(whole).toMatchObject({ originalSize: text.length, truncated: false });
    // Whatever its form (the value where the platform can write it, else its text), every later step can write it.
    const written = JSON.stringify(whole.data);
    expect(typeof whole.data === 'string' ? whole.data : written).toBe(text);
    const cut = truncateOutput(deepObject(100_000), 100);
    expect(cut.truncated).toBe(true);
    expect(cut.data).toBe(`${text.slice(0, 100)}…[truncated: 100 of ${text.length} characters]`);
  });

  it('writes null where a value contains itself (it has no JSON text), and a shared value at each place', () => {
    const loop: Record<string, unknown> = { a: 1 };
    loop.self = loop;
    loop.list = [loop, 2];
    expect(canonicalJson(loop)).toBe('{"a":1,"list":[null,2],"self":null}');
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
  });
});
