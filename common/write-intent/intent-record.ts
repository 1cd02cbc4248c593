import type { ToolResult } from '../contract/tools';
import type { WriteEffect } from '../effects';

/** One write intent as the store knows it. */
export interface IntentRecord {
  key: string;
  taskId: string;
  tool: string;
  /** The call that holds (or last held) the attempt. */
  callId: string;
  /** The effect the intent was claimed under; `unknown` for rows written before effects were recorded (never claimable again while started). */
  effect: WriteEffect | 'unknown';
  /** SHA-256 of the canonical arguments, when the claimant gave it. */
  argsDigest?: string;
  /** The claim token of the attempt that holds (or last held) the intent; commit and release name it. */
  owner?: string;
  /** `started` is written before the side effect, `committed` with its receipt after it. */
  state: 'started' | 'committed';
  receipt?: ToolResult;
  startedAt: string;
  /** Until when a started attempt may still be applying (its timeout plus a grace); after it, a reversible intent may be claimed again. */
  leaseExpiresAt?: string;
  committedAt?: string;
}
