// docs/architecture.md, "Adding an effect level": every layer reads what an effect level means from
// EFFECT_TRAITS rather than comparing its name, so a new level changes behaviour only through its traits.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TOOL_EFFECTS } from '../../common/codes';
import { packageSourceFiles } from '../helpers/error-family';

const ROOT = path.join(__dirname, '..', '..');

/** Where effect names may be compared, each with why. */
const NAMES_ALLOWED_IN: Record<string, string> = {
  'bench/': "the benchmark's scenarios are named after the level they measure, not read from a tool",
};

/** A comparison with an effect's name (`=== 'read'`, `'read' !==`, `case 'read':`), on one line. */
function comparisons(line: string): boolean {
  const names = TOOL_EFFECTS.join('|');
  return new RegExp(`[!=]==\\s*'(?:${names})'|'(?:${names})'\\s*[!=]==|\\bcase\\s+'(?:${names})'\\s*:`).test(line);
}

describe('effect levels are read by their traits', () => {
  it('finds the comparisons it looks for', () => {
    expect(comparisons("if (tool.effect === 'read') run();")).toBe(true);
    expect(comparisons("  case 'irreversible_write':")).toBe(true);
    expect(comparisons("if ('reversible_write' !== effect)")).toBe(true);
    expect(comparisons("const label = 'read';")).toBe(false);
  });

  it("compares no effect level's name in the package's code", () => {
    const found = packageSourceFiles()
      .filter((file) => !Object.keys(NAMES_ALLOWED_IN).some((folder) => file.startsWith(folder)))
      .flatMap((file) =>
        readFileSync(path.join(ROOT, file), 'utf8')
          .split('\n')
          .flatMap((line, index) => (comparisons(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
      );
    expect(found).toEqual([]);
  });
});
