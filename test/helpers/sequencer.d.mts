import { BaseSequencer } from 'vitest/node';

/** Starts the longest recorded test file first, across every tier (test/helpers/sequencer.mjs). */
export declare class LongestFirstSequencer extends BaseSequencer {}
