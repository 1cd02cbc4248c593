/**
 * JSON with object keys sorted at every level, so equal values always give equal text. Pure: workflows use it too.
 * Written without recursion, so a value nested thousands of levels deep (a tool's answer, a model's
 * arguments) gives its text instead of overflowing the stack; a value that contains itself is
 * written `null` where it recurs, as it has no JSON text.
 */
export function canonicalJson(value: unknown): string {
  return writeJson(value, true);
}

/**
 * JSON as JSON.stringify writes it (keys in their own order, no toJSON), where JSON.stringify cannot: on some Node.js
 * versions (22) it overflows its stack near 4,500 levels. For text that is shown or cut, not compared.
 */
export function deepJson(value: unknown): string {
  return writeJson(value, false);
}

function writeJson(value: unknown, sortKeys: boolean): string {
  const parts: string[] = [];
  // What is left to write, last first: a value, or text between values. `open` holds the objects and arrays being written.
  const pending: Array<{ value: unknown } | { text: string; closes?: object }> = [{ value }];
  const open = new Set<object>();
  while (pending.length > 0) {
    const next = pending.pop()!;
    if ('text' in next) {
      parts.push(next.text);
      if (next.closes) open.delete(next.closes);
      continue;
    }
    const item = next.value;
    if (item === undefined) parts.push('null');
    else if (item === null || typeof item !== 'object') parts.push(JSON.stringify(item) ?? 'null');
    else if (open.has(item)) parts.push('null');
    else if (Array.isArray(item)) {
      open.add(item);
      parts.push('[');
      pending.push({ text: ']', closes: item });
      for (let index = item.length - 1; index >= 0; index--) {
        pending.push({ value: item[index] });
        if (index > 0) pending.push({ text: ',' });
      }
    } else {
      open.add(item);
      const entries = Object.entries(item as Record<string, unknown>).filter(([, entry]) => entry !== undefined);
      if (sortKeys) entries.sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
      parts.push('{');
      pending.push({ text: '}', closes: item });
      for (let index = entries.length - 1; index >= 0; index--) {
        pending.push({ value: entries[index][1] });
        pending.push({ text: `${index > 0 ? ',' : ''}${JSON.stringify(entries[index][0])}:` });
      }
    }
  }
  return parts.join('');
}
