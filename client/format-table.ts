import { forTerminal } from './terminal-text';

/**
 * A plain-text table with a header rule, columns padded to their widest cell. Every cell is shown
 * through `forTerminal` first, so a cell from a turn cannot act on the terminal, and the padding is
 * measured on what is printed.
 */
export function formatTable(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((row) => row.map(String))].map((row) => row.map(forTerminal));
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]))
      .join('  ')
      .trimEnd();
  return [line(cells[0]), widths.map((width) => '-'.repeat(width)).join('  '), ...cells.slice(1).map(line)].join('\n');
}
