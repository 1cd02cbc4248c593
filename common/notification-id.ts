import { sha256Hex } from './sha256-hex';

/** What names one notification: the wait (turn, call, kind, round), the channel, and which notice of the wait it is. */
export interface NotificationIdParts {
  workflowId: string;
  callId: string;
  /** The wait's kind (`approval`, `resolution`, `resume`). */
  waitKind: string;
  round: number;
  channel: string;
  /** 0 for the notification when the wait opens; 1, 2, … for its reminders; escalations count on from 1001. */
  notice: number;
}

/**
 * A notification's id and idempotency key: SHA-256 (hex) of the canonical JSON of its parts, so
 * one wait, round, channel and notice have one id on every replay and every worker, and no two
 * differ only by where one field ends and the next begins.
 */
export function notificationId(parts: NotificationIdParts): string {
  const { workflowId, callId, waitKind, round, channel, notice } = parts;
  return sha256Hex(JSON.stringify([workflowId, callId, waitKind, round, channel, notice]));
}
