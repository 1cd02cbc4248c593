// The schema work budget on its own: what it refuses before a validator sees a schema, what one check
// may spend, and that the copy it compiles gives the same verdicts as the schema as written.
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import {
  addWorkKeyword,
  checkWithinBudget,
  DEFAULT_SCHEMA_BUDGET,
  nestingDepth,
  prepareBoundedSchema,
  SchemaBudgetError,
  WORK_KEYWORD,
} from '../../hardened/bounded-schema';
import { checkJsonBounds } from '../../hardened/json-bounds';
import { eventLoopWorkProbe, expectLive } from '../helpers/event-loop-work-probe';
import { dagSchema, deepObject, nestedArrays, nestedDagSchema } from '../helpers/schema-probes';

/** A validator that knows the work keyword, checking within the budget: the verdict, or why it could not be given. */
function bounded(schema: Record<string, unknown>) {
  const ajv = new Ajv({ allErrors: true, strict: false });
  addWorkKeyword(ajv);
  const prepared = prepareBoundedSchema(schema);
  const validate = ajv.compile(prepared.schema);
  return (value: unknown) => checkWithinBudget(value, prepared.budget, () => validate(value));
}

describe('prepareBoundedSchema', () => {
  it('refuses the DAG probe at every depth from 16 to 40 by what its references expand to, in linear time', () => {
    const probe = eventLoopWorkProbe();
    for (let depth = 16; depth <= 40; depth++) {
      let refused: unknown;
      try {
        prepareBoundedSchema(dagSchema(depth));
      } catch (error) {
        refused = error;
      }
      expect(SchemaBudgetError.isInstance(refused), `depth ${depth}`).toBe(true);
      expect((refused as SchemaBudgetError).limit).toBe('maxExpandedWork');
    }
    expectLive(probe.stop());
    // Shallow, the same shape is served: the count is of work, not a refusal of shared definitions.
    expect(prepareBoundedSchema(dagSchema(8)).expandedWork).toBeLessThan(DEFAULT_SCHEMA_BUDGET.maxExpandedWork);
    // A chain of 1,000 definitions each referring to the next costs what it holds: `$defs` apply only through a `$ref`.
    const defs: Record<string, unknown> = { [`d1000`]: { type: 'string' } };
    for (let index = 0; index < 1_000; index++)
      defs[`d${index}`] = { type: 'object', properties: { next: { $ref: `#/$defs/d${index + 1}` } } };
    expect(prepareBoundedSchema({ $ref: '#/$defs/d0', $defs: defs }).expandedWork).toBeLessThan(10_000);
  });

  it('refuses a schema too big, too deep (5,000 levels: no stack overflow), looping on itself, or pointing into data, naming the bound', () => {
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 30_000 }, (_, index) => [`p${index}`, {}])) };
    expect(() => prepareBoundedSchema(wide)).toThrow('it holds more than 20000 nodes (maxNodes)');
    expect(() => prepareBoundedSchema(deepObject(5_000, {}) as Record<string, unknown>)).toThrow(
      'it nests deeper than 64 levels (maxDepth)',
    );
    expect(() =>
      prepareBoundedSchema({ $defs: { a: { not: { $ref: '#/$defs/b' } }, b: { allOf: [{ $ref: '#/$defs/a' }] } }, $ref: '#/$defs/a' }),
    ).toThrow(/lead back to the same subschema without going into the value/);
    expect(() => prepareBoundedSchema({ const: { a: { type: 'string' } }, properties: { x: { $ref: '#/const/a' } } })).toThrow(
      'its $ref "#/const/a" points into data, not at a subschema',
    );
    // A tree of itself goes into the value at each turn: it is served, and its checks are bounded instead.
    expect(() => prepareBoundedSchema(nestedDagSchema())).not.toThrow();
    // A property named like a data keyword is a subschema all the same.
    expect(() => prepareBoundedSchema({ properties: { const: { type: 'string' } }, $ref: '#/properties/const' })).not.toThrow();
  });

  it('charges every subschema in its copy, overwriting a charge the schema brings itself', () => {
    const prepared = prepareBoundedSchema({ properties: { a: { type: 'string', [WORK_KEYWORD]: -1_000_000 } }, [WORK_KEYWORD]: 0 });
    // Each subschema's own cost: itself and every value it holds that is not a subschema (a keyword's value, an enum's entries).
    expect(prepared.schema).toEqual({ properties: { a: { type: 'string', [WORK_KEYWORD]: 3 } }, [WORK_KEYWORD]: 3 });
    const listed = prepareBoundedSchema({ enum: Array.from({ length: 1_000 }, (_, index) => index) });
    expect(listed.schema[WORK_KEYWORD]).toBe(1_002);
  });

  it('gives the same verdicts as the schema as written, on schemas that share definitions, recurse into the value or use every applicator', () => {
    const schemas: Array<Record<string, unknown>> = [
      dagSchema(6),
      nestedDagSchema(),
      {
        type: 'object',
        properties: {
          kind: { enum: ['a', 'b'] },
          n: { type: 'integer', minimum: 0 },
          tags: { type: 'array', items: { $ref: '#/$defs/tag' } },
        },
        required: ['kind'],
        if: { properties: { kind: { const: 'a' } } },
        then: { required: ['n'] },
        else: { not: { required: ['n'] } },
        additionalProperties: false,
        $defs: { tag: { anyOf: [{ type: 'string', maxLength: 3 }, { type: 'integer' }] } },
      },
      { definitions: { node: { type: 'object', properties: { next: { $ref: '#/definitions/node' } } } }, $ref: '#/definitions/node' },
    ];
    const values: unknown[] = [
      {},
      { value: 'x' },
      { value: 1 },
      { tree: nestedArrays(6) },
      { tree: [['x']] },
      { kind: 'a', n: 1, tags: ['abc', 2] },
      { kind: 'a' },
      { kind: 'b', n: 1 },
      { kind: 'b', tags: ['abcd'] },
      { kind: 'c', extra: true },
      deepObject(50, {}),
      { next: { next: 1 } },
      [],
      'text',
    ];
    for (const schema of schemas) {
      const plain = new Ajv({ allErrors: true, strict: false }).compile(schema);
      const check = bounded(schema);
      for (const value of values) expect(check(value), JSON.stringify({ schema, value })).toEqual({ ran: true, value: plain(value) });
    }
  });
});

describe('checkWithinBudget', () => {
  it('stops a check of the folded probe at every depth up to 40 within the work budget, the event loop live', async () => {
    const check = bounded(nestedDagSchema());
    const outcomes = [];
    const probe = eventLoopWorkProbe();
    for (let depth = 1; depth <= 40; depth++) {
      outcomes.push(check({ tree: nestedArrays(depth) }));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, 60));
    expectLive(probe.stop());
    expect(outcomes.slice(0, 10)).toEqual(Array.from({ length: 10 }, () => ({ ran: true, value: true })));
    expect(outcomes[39]).toEqual({ ran: false, why: 'checking it would visit more than 250000 schema nodes (maxCheckWork)' });
  });

  it('does not check a value nested past maxValueDepth, and a validator run outside a budget stops at once', () => {
    const check = bounded({ definitions: { n: { type: 'array', items: { $ref: '#/definitions/n' } } }, $ref: '#/definitions/n' });
    expect(check(nestedArrays(1_000))).toEqual({ ran: true, value: true });
    expect(check(nestedArrays(100_000))).toEqual({
      ran: false,
      why: 'it nests deeper than 1000 levels, more than a check may follow (maxValueDepth)',
    });
    const ajv = new Ajv({ strict: false });
    addWorkKeyword(ajv);
    const validate = ajv.compile(prepareBoundedSchema({ type: 'string' }).schema);
    expect(() => validate('x')).toThrow('a bounded schema was checked outside a work budget');
  });

  it('counts nesting without recursion', () => {
    expect(nestingDepth(nestedArrays(200_000), 1_000)).toBe(1_001);
    expect(nestingDepth({ a: [1, { b: 2 }] }, 10)).toBe(3);
    expect(nestingDepth('x', 10)).toBe(0);
  });
});

describe('checkJsonBounds', () => {
  it('refuses a document nested 100,000 deep or holding too many values without recursion, and lists its own references once', () => {
    expect(() => checkJsonBounds(deepObject(100_000), { maxDepth: 128, maxNodes: 1_000_000 })).toThrow('it nests deeper than 128 levels');
    expect(() =>
      checkJsonBounds(
        Array.from({ length: 2_000 }, () => 1),
        { maxDepth: 128, maxNodes: 1_000 },
      ),
    ).toThrow('it holds more than 1000 values');
    expect(checkJsonBounds({ a: { $ref: '#/b' }, c: [{ $ref: '#/b' }, { $ref: 'http://x/y' }] }, { maxDepth: 10, maxNodes: 100 })).toEqual([
      '#/b',
    ]);
  });
});
