import { SchemaBudgetError } from './bounded-schema';

/** The bounds of a JSON document from outside as a whole. */
export interface JsonBounds {
  /** How deep it may nest. */
  maxDepth: number;
  /** Values (objects, arrays, keys' values) it may hold, a shared value counted each time it is reached. */
  maxNodes: number;
}

/**
 * Walks a parsed JSON (or YAML) document from outside without recursion and throws a
 * {@link SchemaBudgetError} naming the bound when it nests deeper than `maxDepth` or holds more than
 * `maxNodes` values, so that the recursive readers after it (a validator, a walk of its schemas)
 * neither overflow their stack nor run long. Returns the local `$ref`s it holds (`#/…`), each once.
 */
export function checkJsonBounds(document: unknown, { maxDepth, maxNodes }: JsonBounds): string[] {
  const references = new Set<string>();
  const stack: Array<{ value: unknown; depth: number }> = [{ value: document, depth: 1 }];
  let nodes = 0;
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (++nodes > maxNodes) throw new SchemaBudgetError(`it holds more than ${maxNodes} values`, 'maxNodes');
    if (typeof value !== 'object' || value === null) continue;
    if (depth > maxDepth) throw new SchemaBudgetError(`it nests deeper than ${maxDepth} levels`, 'maxDepth');
    if (Array.isArray(value)) {
      for (const item of value) stack.push({ value: item, depth: depth + 1 });
      continue;
    }
    for (const [key, item] of Object.entries(value)) {
      if (key === '$ref' && typeof item === 'string' && item.startsWith('#')) references.add(item);
      stack.push({ value: item, depth: depth + 1 });
    }
  }
  return [...references];
}
