// The order test files start in: the longest first, so that on two cores the last file to start is a
// short one and no worker idles while another runs a long file alone (longest-processing-time first).
// The durations are those of a recorded run (test/helpers/durations.json, written by
// `node test/helpers/record-durations.mjs` after a full run); a file not recorded counts as long, so a
// new file is never the one left for last.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer } from 'vitest/node';

const ROOT = path.join(import.meta.dirname, '..', '..');
/** @type {Record<string, number>} */
const recorded = JSON.parse(readFileSync(path.join(import.meta.dirname, 'durations.json'), 'utf8'));
const UNRECORDED_SECONDS = 60;

/** @param {import('vitest/node').TestSpecification} spec */
function secondsOf(spec) {
  const file = path.relative(ROOT, spec.moduleId).split(path.sep).join('/');
  return recorded[file] ?? UNRECORDED_SECONDS;
}

/** Longest recorded file first, across every tier. */
export class LongestFirstSequencer extends BaseSequencer {
  /** @param {import('vitest/node').TestSpecification[]} files */
  async sort(files) {
    return [...files].sort((a, b) => secondsOf(b) - secondsOf(a));
  }
}
