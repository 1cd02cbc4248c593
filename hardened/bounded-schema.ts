/**
 * JSON Schemas from outside (an MCP tool's schemas, an OpenAPI operation's input, an approval rule's
 * or a grant's condition) checked under a work budget. Patterns are bounded elsewhere (RE2, see
 * `linear-regex.ts`); this bounds the rest: how big and how deep a schema may be, how much one
 * application of it may cost once every `$ref` is followed, and how much one check may spend.
 *
 * A schema whose `$defs` form a DAG (each level an `allOf` of two `$ref`s to the next) is 2 KB and
 * costs 2^depth to apply. {@link prepareBoundedSchema} measures it before any validator sees it: a
 * walk of the schema (never recursive, so no depth overflows it) that counts, with one memoised
 * count per node, what applying it once to one value visits; past `maxExpandedWork` the schema is
 * refused. A schema that refers to itself (a tree of itself) cannot be measured that way, since its
 * cost grows with the value, so the copy it returns carries a charge at every subschema and
 * {@link checkWithinBudget} stops a check once it has spent `maxCheckWork`.
 */
import type { Ajv, KeywordDefinition } from 'ajv';
import { TollgateError } from '../common/tollgate-error';

/** The keyword every subschema of a prepared copy carries: what one application of that subschema costs. */
export const WORK_KEYWORD = 'x-tollgate-work';

/** The bounds of one schema and of each check against it. */
export interface SchemaBudget {
  /** JSON values (objects, arrays, keys' values) the schema may hold. */
  maxNodes: number;
  /** How deep the schema may nest. */
  maxDepth: number;
  /** Nodes visited by applying the schema once to one value, every reference followed (a reference back into itself counted once). */
  maxExpandedWork: number;
  /** Nodes one check may visit, references followed as often as the value makes them. */
  maxCheckWork: number;
  /** How deep a checked value may nest. */
  maxValueDepth: number;
}

/**
 * The default budget. A check of the full budget costs a few tens of milliseconds at worst; a
 * schema of 20,000 nodes compiles in well under a second; legitimate schemas (an API's request
 * body with its components, a rule's condition) stay far below each bound.
 */
export const DEFAULT_SCHEMA_BUDGET: Readonly<SchemaBudget> = Object.freeze({
  maxNodes: 20_000,
  maxDepth: 64,
  maxExpandedWork: 100_000,
  maxCheckWork: 250_000,
  maxValueDepth: 1_000,
});

/** A schema refused before it is compiled, or a check stopped, because it would pass a bound; `limit` names the bound. */
export class SchemaBudgetError extends TollgateError {
  static override readonly marker = 'tollgate.error.SchemaBudgetError';
  readonly limit: keyof SchemaBudget | 'reference';

  constructor(message: string, limit: keyof SchemaBudget | 'reference') {
    super(message);
    this.name = 'SchemaBudgetError';
    this.limit = limit;
  }
}

/** Keywords whose value is a map of names to subschemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);
/** Keywords that apply their subschemas to the value itself, not to a part of it: a cycle of these alone never ends. */
const IN_PLACE = new Set(['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'dependentSchemas', 'dependencies']);
/** Keywords that apply their subschemas to parts of the value. Subschemas anywhere else (`$defs`, unknown keywords) apply only through a `$ref`. */
const BELOW = new Set([
  'properties',
  'patternProperties',
  'additionalProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
]);
/** Keywords whose value is data, never a schema: nothing inside them is applied. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples', 'example', 'required', 'type', 'dependentRequired']);

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What the walk learned of a schema: its subschemas, what each costs on its own, and what each leads to. */
interface SchemaGraph {
  /** Every subschema (an object in a schema position), with the nodes it holds that are not subschemas themselves. */
  weights: Map<Json, number>;
  /**
   * The subschemas each one holds or refers to: `applied` when applying it applies them (through an
   * applicator or a `$ref`; not those under `$defs`), `here` when to the same value.
   */
  edges: Map<Json, Array<{ to: Json; here: boolean; applied: boolean }>>;
  /** `$ref`s, with the subschema that holds each. */
  references: Array<{ holder: Json; ref: string }>;
}

/** The subschema or data value at a JSON pointer fragment (`#/a/b`), or undefined. */
function atFragment(root: unknown, fragment: string): unknown {
  if (fragment === '' || fragment === '/') return fragment === '' ? root : undefined;
  let at: unknown = root;
  for (const raw of fragment.slice(1).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (Array.isArray(at)) at = /^\d+$/.test(key) ? at[Number(key)] : undefined;
    else if (isObject(at) && Object.hasOwn(at, key)) at = at[key];
    else return undefined;
  }
  return at;
}

/** One pass over the schema, never recursive: nodes and depth counted and capped, subschemas told from data. */
function walk(schema: Json, budget: SchemaBudget): SchemaGraph {
  const weights = new Map<Json, number>([[schema, 1]]);
  const edges: SchemaGraph['edges'] = new Map([[schema, []]]);
  const references: SchemaGraph['references'] = [];
  // Each entry: a value, how deep it lies, how it is read, the subschema it belongs to, and whether that applies it to its own value.
  const stack: Array<{
    value: unknown;
    depth: number;
    role: 'schema' | 'map' | 'list' | 'data';
    owner: Json;
    here: boolean;
    applied: boolean;
  }> = [{ value: schema, depth: 1, role: 'schema', owner: schema, here: false, applied: false }];
  let nodes = 0;
  while (stack.length > 0) {
    const { value, depth, role, owner, here, applied } = stack.pop()!;
    if (++nodes > budget.maxNodes) throw new SchemaBudgetError(`it holds more than ${budget.maxNodes} nodes (maxNodes)`, 'maxNodes');
    if (depth > budget.maxDepth) throw new SchemaBudgetError(`it nests deeper than ${budget.maxDepth} levels (maxDepth)`, 'maxDepth');
    // A subschema: it charges for itself, and what it holds is read by keyword.
    if (role === 'schema' && isObject(value)) {
      if (value !== owner) {
        edges.get(owner)!.push({ to: value, here, applied });
        // The same object in two places (a caller's shared object): one subschema, walked once.
        if (weights.has(value)) continue;
        weights.set(value, 1);
        edges.set(value, []);
      }
      for (const [keyword, item] of Object.entries(value)) {
        if (keyword === '$ref' || keyword === '$dynamicRef' || keyword === '$recursiveRef') {
          if (typeof item === 'string') references.push({ holder: value, ref: item });
          continue;
        }
        const itemRole = DATA_KEYWORDS.has(keyword)
          ? 'data'
          : SCHEMA_MAPS.has(keyword) && isObject(item)
            ? 'map'
            : Array.isArray(item)
              ? 'list'
              : 'schema';
        const inPlace = IN_PLACE.has(keyword);
        stack.push({ value: item, depth: depth + 1, role: itemRole, owner: value, here: inPlace, applied: inPlace || BELOW.has(keyword) });
      }
      continue;
    }
    // Anything else (a keyword's value, an `enum`'s entries, a map of subschemas) adds to its subschema's cost.
    weights.set(owner, weights.get(owner)! + 1);
    if (typeof value !== 'object' || value === null) continue;
    const childRole = role === 'data' ? 'data' : 'schema';
    const children = Array.isArray(value) ? value : Object.values(value);
    for (const item of children) stack.push({ value: item, depth: depth + 1, role: childRole, owner, here, applied });
  }
  return { weights, edges, references };
}

/** Adds each `$ref`'s target to what its holder applies; a pointer into data (`const`, `enum`, …) is refused. */
function linkReferences(schema: Json, graph: SchemaGraph): void {
  for (const { holder, ref } of graph.references) {
    const hash = ref.indexOf('#');
    const fragment = hash === -1 ? '' : ref.slice(hash + 1);
    if (hash === 0 && fragment.startsWith('/')) {
      const target = atFragment(schema, fragment);
      if (isObject(target)) {
        if (!graph.weights.has(target))
          throw new SchemaBudgetError(`its $ref ${JSON.stringify(ref)} points into data, not at a subschema`, 'reference');
        graph.edges.get(holder)!.push({ to: target, here: true, applied: true });
      }
      // A reference to nothing, or to true or false, is left to the validator to refuse or to apply.
      continue;
    }
    // A reference by $id or anchor is charged at check time; one whose pointer goes through data is refused now.
    if (fragment.startsWith('/') && fragment.split('/').some((segment) => DATA_KEYWORDS.has(segment) && segment !== 'type'))
      throw new SchemaBudgetError(`its $ref ${JSON.stringify(ref)} points into data, not at a subschema`, 'reference');
  }
}

/**
 * What applying the schema once to one value visits, every reference followed: one memoised count
 * per subschema, so linear in the schema's size whatever the expansion; a reference back to a
 * subschema being counted adds nothing (its cost grows with the value and is charged at check
 * time). Throws past `maxExpandedWork`.
 */
function expandedWork(schema: Json, graph: SchemaGraph, budget: SchemaBudget): number {
  const done = new Map<Json, number>();
  const open = new Set<Json>([schema]);
  const stack: Array<{ node: Json; next: number; total: number }> = [{ node: schema, next: 0, total: graph.weights.get(schema)! }];
  const over = () =>
    new SchemaBudgetError(
      `applying it once follows its references to more than ${budget.maxExpandedWork} nodes (maxExpandedWork)`,
      'maxExpandedWork',
    );
  let result = 0;
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const children = graph.edges.get(top.node)!;
    if (top.next < children.length) {
      const edge = children[top.next++];
      // A subschema kept under `$defs` costs nothing until a `$ref` applies it (that edge is counted).
      if (!edge.applied) continue;
      const child = edge.to;
      const counted = done.get(child);
      if (counted !== undefined) {
        top.total += counted;
        if (top.total > budget.maxExpandedWork) throw over();
      } else if (!open.has(child)) {
        open.add(child);
        stack.push({ node: child, next: 0, total: graph.weights.get(child)! });
      }
      continue;
    }
    stack.pop();
    open.delete(top.node);
    done.set(top.node, top.total);
    if (stack.length === 0) result = top.total;
    else {
      const parent = stack[stack.length - 1];
      parent.total += top.total;
      if (parent.total > budget.maxExpandedWork) throw over();
    }
  }
  return result;
}

/**
 * Refuses a schema whose subschemas lead back to themselves through keywords that apply to the same
 * value (`$ref`, `allOf`, `not`, …) alone: checking any value against it would never end. One
 * colouring walk over those edges, never recursive.
 */
function refuseEndlessCycles(graph: SchemaGraph): void {
  const state = new Map<Json, 'open' | 'done'>();
  for (const start of graph.edges.keys()) {
    if (state.has(start)) continue;
    state.set(start, 'open');
    const stack: Array<{ node: Json; next: number }> = [{ node: start, next: 0 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const out = graph.edges.get(top.node)!;
      if (top.next >= out.length) {
        state.set(top.node, 'done');
        stack.pop();
        continue;
      }
      const { to, here } = out[top.next++];
      if (!here) continue;
      const seen = state.get(to);
      if (seen === 'open')
        throw new SchemaBudgetError(
          'its references lead back to the same subschema without going into the value (through $ref, allOf, anyOf, oneOf, not or if alone), so a check would never end',
          'reference',
        );
      if (seen === undefined) {
        state.set(to, 'open');
        stack.push({ node: to, next: 0 });
      }
    }
  }
}

/** A copy of the schema in which every subschema carries {@link WORK_KEYWORD}: what one application of it costs. */
function chargedCopy(schema: Json, graph: SchemaGraph): Json {
  const copies = new Map<unknown, unknown>();
  const copyOf = (value: unknown): unknown => copies.get(value) ?? value;
  // Copies are made top down and filled bottom up, never recursively.
  const order: unknown[] = [];
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== 'object' || value === null || copies.has(value)) continue;
    copies.set(value, Array.isArray(value) ? new Array(value.length) : {});
    order.push(value);
    for (const item of Array.isArray(value) ? value : Object.values(value)) stack.push(item);
  }
  for (const value of order) {
    const copy = copies.get(value) as Json | unknown[];
    if (Array.isArray(value)) value.forEach((item, index) => ((copy as unknown[])[index] = copyOf(item)));
    else {
      for (const [key, item] of Object.entries(value as Json)) (copy as Json)[key] = copyOf(item);
      const weight = graph.weights.get(value as Json);
      if (weight !== undefined) (copy as Json)[WORK_KEYWORD] = weight;
    }
  }
  return copies.get(schema) as Json;
}

/** A schema measured within its budget, ready for a validator that knows {@link WORK_KEYWORD}. */
export interface PreparedSchema {
  /** The copy to compile: the schema as given, every subschema charging its cost. */
  schema: Json;
  /** Nodes visited by one application to one value, references followed once. */
  expandedWork: number;
  budget: SchemaBudget;
}

/**
 * Measures a schema from outside within its budget and returns the copy to compile. Throws a
 * {@link SchemaBudgetError} naming the bound it would pass (the caller names the tool, source, rule
 * or grant): too many nodes, too deep, references that expand past `maxExpandedWork`, or a `$ref`
 * into data.
 */
export function prepareBoundedSchema(schema: unknown, budget: Partial<SchemaBudget> = {}): PreparedSchema {
  if (!isObject(schema)) throw new Error('the schema is not a JSON object');
  const bounds = { ...DEFAULT_SCHEMA_BUDGET, ...budget };
  const graph = walk(schema, bounds);
  linkReferences(schema, graph);
  refuseEndlessCycles(graph);
  const work = expandedWork(schema, graph, bounds);
  return { schema: chargedCopy(schema, graph), expandedWork: work, budget: bounds };
}

/** The work left in the current check. */
let scope: { remaining: number } | undefined;

/** Thrown from inside a validator when its check has spent its budget; caught by {@link checkWithinBudget}. */
class WorkExhausted extends Error {}

/**
 * ajv's definition of {@link WORK_KEYWORD}: every application of a subschema charges its cost to
 * the check under way and stops it once its budget is spent. A validator that is run outside
 * {@link checkWithinBudget} stops at once rather than run unbounded.
 */
export const workKeyword: KeywordDefinition = {
  keyword: WORK_KEYWORD,
  schemaType: 'number',
  errors: false,
  validate: (cost: number) => {
    if (!scope) throw new WorkExhausted('a bounded schema was checked outside a work budget');
    scope.remaining -= cost;
    if (scope.remaining < 0) throw new WorkExhausted();
    return true;
  },
};

/** Registers {@link WORK_KEYWORD} on a validator once. */
export function addWorkKeyword(ajv: Pick<Ajv, 'getKeyword' | 'addKeyword'>): void {
  if (!ajv.getKeyword(WORK_KEYWORD)) ajv.addKeyword(workKeyword);
}

/** How deep a JSON value nests, counted without recursion and only up to `limit + 1`. */
export function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const { value: item, depth } = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push({ value: child, depth: depth + 1 });
  }
  return deepest;
}

/** How a bounded check ended: it ran (its value), or it could not be run within the budget (why). */
export type BoundedOutcome<T> = { ran: true; value: T } | { ran: false; why: string };

/**
 * Runs a validator of a prepared schema on a value within the budget: a value nested deeper than
 * `maxValueDepth` is not checked at all, and a check that spends `maxCheckWork` is stopped. Either
 * way (and if the validator throws, say by overflowing its stack) the outcome says why it did not
 * run, never throws.
 */
export function checkWithinBudget<T>(value: unknown, budget: SchemaBudget, run: () => T): BoundedOutcome<T> {
  if (nestingDepth(value, budget.maxValueDepth) > budget.maxValueDepth)
    return { ran: false, why: `it nests deeper than ${budget.maxValueDepth} levels, more than a check may follow (maxValueDepth)` };
  const outer = scope;
  scope = { remaining: budget.maxCheckWork };
  try {
    return { ran: true, value: run() };
  } catch (error) {
    if (error instanceof WorkExhausted)
      return { ran: false, why: `checking it would visit more than ${budget.maxCheckWork} schema nodes (maxCheckWork)` };
    return { ran: false, why: (error instanceof Error ? error.message : String(error)).split('\n')[0] };
  } finally {
    scope = outer;
  }
}
