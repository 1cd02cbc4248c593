// The hostile schemas of the schema-work conformance cases, built one way for every consumer (MCP, OpenAPI, rules, grants).

/**
 * The DAG probe: `depth` levels of `$defs`, each an `allOf` of two `$ref`s to the next, the last a
 * string. About 60 bytes a level; a validator that follows every reference visits 2^depth nodes.
 * `prefix` is where the levels live (`#/$defs/` in a JSON Schema, `#/components/schemas/` in an
 * OpenAPI document).
 */
export function dagLevels(depth: number, prefix = '#/$defs/'): Record<string, unknown> {
  const levels: Record<string, unknown> = {};
  for (let level = 0; level < depth; level++)
    levels[`L${level}`] = { allOf: [{ $ref: `${prefix}L${level + 1}` }, { $ref: `${prefix}L${level + 1}` }] };
  levels[`L${depth}`] = { type: 'string' };
  return levels;
}

/** A JSON Schema of an object whose `value` is the DAG probe of this depth. */
export function dagSchema(depth: number): Record<string, unknown> {
  return { type: 'object', properties: { value: { $ref: '#/$defs/L0' } }, $defs: dagLevels(depth) };
}

/**
 * The DAG folded into one recursive level: a tree of arrays whose items are an `allOf` of two
 * `$ref`s back to the tree. Its references expand to a few nodes, so it compiles; a value of
 * arrays nested `n` deep makes a validator that follows every reference visit 2^n nodes.
 */
export function nestedDagSchema(): Record<string, unknown> {
  return {
    type: 'object',
    properties: { tree: { $ref: '#/$defs/tree' } },
    required: ['tree'],
    $defs: { tree: { type: 'array', items: { allOf: [{ $ref: '#/$defs/tree' }, { $ref: '#/$defs/tree' }] } } },
  };
}

/** Arrays nested `depth` deep around an empty one: `[[[]]]` for 3. */
export function nestedArrays(depth: number): unknown {
  let value: unknown = [];
  for (let level = 1; level < depth; level++) value = [value];
  return value;
}

/**
 * The JSON text of `deepObject(depth, bottom)`, written without JSON.stringify: some Node.js versions (22) overflow
 * stringify's stack near 4,500 levels, and a hostile party is not bound by any serializer.
 */
export function deepJsonText(depth: number, bottom: unknown = 'bottom'): string {
  return `${'{"next":'.repeat(depth)}${JSON.stringify(bottom)}${'}'.repeat(depth)}`;
}

/** Objects nested `depth` deep (`{ next: { next: … "bottom" } }`), as a hostile answer or argument carries them. */
export function deepObject(depth: number, bottom: unknown = 'bottom'): unknown {
  let value: unknown = bottom;
  for (let level = 0; level < depth; level++) value = { next: value };
  return value;
}
