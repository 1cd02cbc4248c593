import type { ToolResult } from '../common/contract/tools';
import type { IntentRecord } from '../common/write-intent/intent-record';
import { claimRule } from '../common/write-intent/claim-rule';
import { effectsWhere, isWriteEffect, type WriteEffect } from '../common/effects';
import { TollgateError } from '../common/tollgate-error';

export type { WriteEffect } from '../common/effects';

export type { IntentRecord } from '../common/write-intent/intent-record';

/** What a claimant asks for: the attempt at one intent, for at most `leaseMs`. */
export interface ClaimRequest {
  key: string;
  taskId: string;
  tool: string;
  callId: string;
  argsDigest: string;
  effect: WriteEffect;
  /** How long the attempt may run: the call's timeout. The store adds its in-flight grace; until then nobody else may claim a reversible intent, and a lookup reports it in flight. */
  leaseMs: number;
  /**
   * The owner of a committed record that the tool's own status check proved stale (the world no
   * longer holds what it recorded): the claim replaces exactly that record, and no newer one, and
   * only under an effect whose receipts are rechecked (an irreversible write's receipt stands).
   */
  supersede?: string;
  /**
   * The claim token the claimant chose for this attempt (the store makes one up when left out). A
   * claim repeated with the token of a started record gets that record back as claimed: a claim
   * whose answer was lost on the way (the connection cut after the store committed it) is found
   * again by its own claimant rather than taken for someone else's attempt.
   */
  owner?: string;
}

/** Who owns the attempt after a claim. */
export type ClaimResult =
  | {
      claimed: true;
      /** The token that commit and release must name. */
      owner: string;
      record: IntentRecord;
      /** The record this claim replaced: a reversible attempt whose lease expired, or a stale committed one. */
      replaced?: IntentRecord;
    }
  | {
      claimed: false;
      /** The record that holds the intent: committed (with its receipt), or started by someone else. */
      record: IntentRecord;
    };

/** What a retention pass did. */
export interface PruneReport {
  /** Committed intents deleted because they were older than the retention period. */
  deleted: number;
  /** Started intents older than the retention period: kept, since nobody knows whether they took effect. */
  startedKept: number;
  /** Kept contents (tool results later model steps referred to) deleted because they were older than the retention period. */
  contentsDeleted?: number;
  /** Records of sent notifications deleted because they were older than the retention period. */
  notificationsDeleted?: number;
}

/** A notification recorded as delivered: its id (the idempotency key), where and when it went. */
export interface SentNotification {
  id: string;
  channel: string;
  workflowId: string;
  callId: string;
  kind: string;
  /** When the receiver took it (ISO 8601). */
  sentAt: string;
  /** The attempts its delivery took. */
  attempts: number;
}

/** Content a turn keeps once and refers to after (a tool result its later model steps are sent by reference). */
export interface KeptContent {
  /** `<workflow id>/<call id>/<digest>`: one content per key, never changed once written. */
  key: string;
  taskId: string;
  /** The SHA-256 of `content` (hex); a reader checks it. */
  digest: string;
  content: string;
}

/** How long after a call's timeout its attempt still counts as in flight: a handler that ignores its abort signal may still be applying. */
export const DEFAULT_IN_FLIGHT_GRACE_MS = 10_000;

/** Options both stores take. */
export interface IntentStoreOptions {
  /** Added to every claim's lease (default `DEFAULT_IN_FLIGHT_GRACE_MS`). */
  inFlightGraceMs?: number;
}

/** A store call that failed (the store cannot be reached, or answered with an error): the boundary reports it, never guesses. */
export class IntentStoreError extends TollgateError {
  static override readonly marker = 'tollgate.error.IntentStoreError';
  override name = 'IntentStoreError';
  constructor(
    readonly operation: string,
    cause: unknown,
  ) {
    super(`the idempotency store could not ${operation}: ${describeCause(cause)}`, { cause });
  }
}

/** The first line of whatever a store threw (an Error, a string, or anything else), at most 300 characters. */
function describeCause(cause: unknown): string {
  let text: string;
  if (cause instanceof Error) text = cause.message || cause.name;
  else if (typeof cause === 'string') text = cause;
  else if (cause === undefined || cause === null) text = `it threw ${String(cause)}`;
  else {
    try {
      text = JSON.stringify(cause) ?? String(cause);
    } catch {
      text = Object.prototype.toString.call(cause);
    }
  }
  const firstLine = (text.split('\n')[0] ?? '').trim() || 'it failed without a message';
  return firstLine.length > 300 ? `${firstLine.slice(0, 299)}…` : firstLine;
}

/** Where write intents are recorded durably, so that no retry and no repeat writes twice. */
export interface IdempotencyStore {
  get(key: string): Promise<IntentRecord | undefined>;
  /**
   * Claims the attempt at an intent, atomically: exactly one of any number of concurrent claimants
   * gets `claimed: true`. An absent intent is claimable; a started reversible one only after its
   * lease expired; a started irreversible one never again; a committed one only by `supersede`. A
   * started one whose claim token is the request's `owner` is the claimant's own: claimed again,
   * unchanged while its lease holds, renewed once it ran out (so nobody takes it over meanwhile).
   */
  claim(request: ClaimRequest): Promise<ClaimResult>;
  /**
   * Records that the attempt `owner` took effect, with the result the model saw. Only the started
   * record of that very claim is committed (key and claim token both match); an absent record is
   * written committed (the attempt did take effect). False, and nothing changed, when the intent is
   * committed already or held by another claim: a late commit of an older attempt never lands on a
   * newer claim of the same intent.
   */
  commit(commit: { key: string; owner: string; receipt: ToolResult }): Promise<boolean>;
  /** Records a receipt for an intent the tool's own status check found applied; an existing started row is committed, a committed one kept. */
  recordApplied(record: { key: string; taskId: string; tool: string; argsDigest?: string; receipt: ToolResult }): Promise<void>;
  /** Ends the lease of an attempt whose handler returned or threw without a verdict: it stays started (nobody knows whether it took effect) but is no longer in flight. */
  endLease(lease: { key: string; owner: string }): Promise<boolean>;
  /** Gives up an attempt whose tool said, definitely, that it did nothing; only its owner can, and only while started. */
  release(release: { key: string; owner: string }): Promise<boolean>;
  /** The intents of one task, oldest first. */
  listTask(taskId: string): Promise<IntentRecord[]>;
  /** Deletes committed intents committed before `committedBefore`; started ones are never deleted, only counted. */
  prune(options: { committedBefore: Date }): Promise<PruneReport>;
  /**
   * Keeps a content once; writing a key again keeps the first. Optional: a store without it (a
   * custom one) leaves tool results in every model step's input, as they were.
   */
  keepContent?(content: KeptContent): Promise<void>;
  /** The content kept under `key`, or undefined when the store has none. */
  readContent?(key: string): Promise<KeptContent | undefined>;
  /**
   * The delivery recorded for a notification id, or undefined. Optional, with
   * `recordNotificationSent`: a store without them (a custom one) lets a re-run send again, and the
   * receiver's dedupe by id covers it.
   */
  notificationSent?(id: string): Promise<SentNotification | undefined>;
  /** Records a notification as delivered; recording an id again keeps the first record. */
  recordNotificationSent?(sent: SentNotification): Promise<void>;
  close(): Promise<void>;
}

/** A stored row, as both stores keep it. */
export interface IntentRow {
  key: string;
  task_id: string;
  tool: string;
  call_id: string;
  state: 'started' | 'committed';
  receipt: string | null;
  started_at: string;
  committed_at: string | null;
  effect: string | null;
  args_digest: string | null;
  owner: string | null;
  /** Milliseconds since the epoch; a string when PostgreSQL returns a BIGINT. */
  lease_until: number | string | null;
}

/** The columns of the intents table, the same in both stores. */
export const INTENT_COLUMNS_SQL = `key TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('started', 'committed')),
    receipt TEXT,
    started_at TEXT NOT NULL,
    committed_at TEXT`;

/** The columns of the kept contents table, the same in both stores. */
export const CONTENT_COLUMNS_SQL = `key TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    content TEXT NOT NULL,
    kept_at TEXT NOT NULL`;

/** The columns of the sent notifications table, the same in both stores. */
export const NOTIFICATION_COLUMNS_SQL = `id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    attempts INTEGER NOT NULL`;

/** A stored row of a sent notification, as both stores keep it. */
export interface SentNotificationRow {
  id: string;
  channel: string;
  workflow_id: string;
  call_id: string;
  kind: string;
  sent_at: string;
  attempts: number;
}

/** A stored row as the record the activity reads. */
export function sentNotificationFromRow(row: SentNotificationRow | undefined): SentNotification | undefined {
  if (!row) return undefined;
  return {
    id: row.id,
    channel: row.channel,
    workflowId: row.workflow_id,
    callId: row.call_id,
    kind: row.kind,
    sentAt: row.sent_at,
    attempts: Number(row.attempts),
  };
}

/** Checks a sent notification's record before it reaches a store, so that a bad one is refused with what was wrong. */
export function checkSentNotification(sent: SentNotification): void {
  for (const field of ['id', 'channel', 'workflowId', 'callId', 'kind', 'sentAt'] as const) {
    if (typeof sent?.[field] !== 'string' || sent[field].length === 0)
      throw new TypeError(`recordNotificationSent: ${field} must be a non-empty string`);
  }
  if (!Number.isInteger(sent.attempts) || sent.attempts < 0)
    throw new TypeError(`recordNotificationSent: attempts must be a whole number, got ${String(sent.attempts)}`);
}

/** Checks content before it reaches a store, so that a bad one is refused with what was wrong. */
export function checkKeptContent(content: KeptContent): void {
  for (const field of ['key', 'taskId', 'digest', 'content'] as const) {
    if (typeof content?.[field] !== 'string' || (field !== 'content' && content[field].length === 0))
      throw new TypeError(`keepContent: ${field} must be a ${field === 'content' ? '' : 'non-empty '}string`);
  }
}

/** Columns added after the first release; both stores add them to an older table when they open it. */
export const ADDED_COLUMNS: ReadonlyArray<{ name: string; sqliteType: string; postgresType: string }> = [
  { name: 'effect', sqliteType: 'TEXT', postgresType: 'TEXT' },
  { name: 'args_digest', sqliteType: 'TEXT', postgresType: 'TEXT' },
  { name: 'owner', sqliteType: 'TEXT', postgresType: 'TEXT' },
  { name: 'lease_until', sqliteType: 'INTEGER', postgresType: 'BIGINT' },
];

/** A row as the record the boundary reads. */
export function recordFromRow(row: IntentRow | undefined): IntentRecord | undefined {
  if (!row) return undefined;
  const effect = isWriteEffect(row.effect) ? row.effect : 'unknown';
  return {
    key: row.key,
    taskId: row.task_id,
    tool: row.tool,
    callId: row.call_id,
    effect,
    ...(row.args_digest ? { argsDigest: row.args_digest } : {}),
    ...(row.owner ? { owner: row.owner } : {}),
    state: row.state,
    receipt: row.receipt ? (JSON.parse(row.receipt) as ToolResult) : undefined,
    startedAt: row.started_at,
    ...(row.lease_until !== null && row.lease_until !== undefined
      ? { leaseExpiresAt: new Date(Number(row.lease_until)).toISOString() }
      : {}),
    committedAt: row.committed_at ?? undefined,
  };
}

/** Checks a claim before it reaches a store, so that a bad one is refused with what was wrong. */
export function checkClaimRequest(request: ClaimRequest): void {
  for (const field of ['key', 'taskId', 'tool', 'callId', 'argsDigest'] as const) {
    if (typeof request[field] !== 'string' || request[field].length === 0)
      throw new TypeError(`claim: ${field} must be a non-empty string`);
  }
  if (!isWriteEffect(request.effect))
    throw new TypeError(
      `claim: effect must be one of the effects recorded as intents (${effectsWhere((traits) => traits.claimsIntent).join(', ')}), got "${String(request.effect)}"`,
    );
  if (request.owner !== undefined && (typeof request.owner !== 'string' || request.owner.length === 0))
    throw new TypeError('claim: owner (the claim token) must be a non-empty string when given');
  if (!Number.isFinite(request.leaseMs) || request.leaseMs < 0)
    throw new TypeError(`claim: leaseMs must be a non-negative number of milliseconds, got ${String(request.leaseMs)}`);
}

/**
 * What a claim does with the record that holds its intent (both stores decide alike, inside their
 * lock): the write protocol's claim rule (`common/write-intent/claim-rule.ts`) on the stored row.
 */
export function claimDecision(existing: IntentRow, request: ClaimRequest, now: number): 'own' | 'take_over' | 'refuse' {
  const leaseUntilMs = existing.lease_until === null ? null : Number(existing.lease_until);
  return claimRule({ state: existing.state, effect: existing.effect, owner: existing.owner, leaseUntilMs }, request, now);
}
