// Canonical JSON (what every argument digest and definition digest is computed over) of ordinary and hostile values.
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../common/canonical-json';
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
    expect(objects).toBe(JSON.stringify(deepObject(100_000)));
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
