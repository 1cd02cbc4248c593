// Writes test/helpers/durations.json from the JSON report of a full run (test-output/vitest-results.json):
// each test file's wall time in whole seconds, which test/helpers/sequencer.ts starts the longest first by.
// Usage, after `npm test`: node test/helpers/record-durations.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.join(import.meta.dirname, '..', '..');
const report = JSON.parse(readFileSync(path.join(root, 'test-output', 'vitest-results.json'), 'utf8'));
const durations = Object.fromEntries(
  report.testResults
    .map((file) => [
      path.relative(root, file.name).split(path.sep).join('/'),
      Math.max(1, Math.round((file.endTime - file.startTime) / 1000)),
    ])
    .sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(path.join(root, 'test', 'helpers', 'durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
console.log(`${Object.keys(durations).length} files recorded in test/helpers/durations.json`);
