/**
 * Telling the people who decide (docs/approvals.md, "Who is told"): the message a channel sends
 * about one wait, what became of sending it, and the routes that say which waits go to which
 * channels. Shared by the turn (which starts the sending), the `sendNotification` activity and
 * every surface that shows who was told.
 */

/** Why a notification is sent: a wait opened (its kind), a reminder of it, or its escalation. */
export type NotificationKind = 'approval' | 'resolution' | 'resume' | 'reminder' | 'escalation';

/** One message about one wait to one channel. */
export interface Notification {
  /**
   * The idempotency key, and the receiver's key to drop duplicates by: SHA-256 (hex) of the turn's
   * workflow id, the call, the wait's kind and round, the channel and the notice number
   * (`notificationId`): one per wait, round, channel and reminder or escalation.
   */
  id: string;
  kind: NotificationKind;
  /** The round of the wait (1, then 2 and on when the call waits again after an edit or a not-applied answer). */
  round: number;
  tool: string;
  /** The agent whose turn asks (left out for the default agent). */
  agent?: string;
  /** Agent names from the root turn down to this one, when the turn is a subagent's. */
  lineage?: string[];
  taskId: string;
  workflowId: string;
  /** The waiting call's id (`resume:<step>` for a stream cut off after chunks went out). */
  callId: string;
  /** Who may decide (approver key names); empty when any approver may. */
  deciders: string[];
  /** When the wait ends if nobody decides (ISO 8601). */
  waitsUntil: string;
  /** The item in the web inbox: `<inbox.publicUrl>/#/item/<workflowId>/<callId>`. Following it decides nothing. */
  link: string;
  /** The arguments as shown (redacted); a channel sends them only when it is marked `arguments: true`. */
  arguments?: unknown;
  /** For a reminder or an escalation: which one of the wait it is (1, 2, …). */
  notice?: number;
  /** For an escalation: the approver group told, which may decide from then on. */
  escalatedTo?: string;
}

/** What became of sending one notification to one channel. */
export interface NotificationReceipt {
  channel: string;
  id: string;
  status: 'sent' | 'failed' | 'skipped';
  /** When the sending ended (ISO 8601). */
  at: string;
  /** Why it failed or was skipped. */
  error?: string;
  attempts: number;
  /** Which notification of the wait it was (set by the turn: the first, a reminder, an escalation). */
  kind?: NotificationKind;
}

/** The input of the `sendNotification` activity. */
export interface SendNotificationInput {
  notification: Notification;
  /** The channel's name in config `approvals.notify.channels`. */
  channel: string;
}

/** The `sendNotification` activity as the turn calls it (registered by the worker beside the others). */
export interface NotificationActivities {
  sendNotification(input: SendNotificationInput): Promise<NotificationReceipt>;
}

/** A receipt as the turn's list keeps it: with the call and the round of the wait it told of. */
export type TurnNotificationReceipt = NotificationReceipt & { callId: string; round: number };

/**
 * One route as a turn reads it (config `approvals.notify.routes`, or `createWorker({ notify })`):
 * which waits it matches (by tool, agent or approver group; a list left out matches any), the
 * channels told, and the timers of the wait.
 */
export interface NotifyRouteSettings {
  /** Tool names or patterns with `*`. */
  tools?: string[];
  agents?: string[];
  /** Approver groups (`approvals.notify.groups`): the route matches a wait one of whose deciders is in one of them. */
  groups?: string[];
  channels: string[];
  /** Tell the channels again every this many milliseconds while the wait is open. */
  remindAfterMs?: number;
  /** After this many milliseconds, tell `escalateTo` and let it decide too. */
  escalateAfterMs?: number;
  /** The approver group told, and allowed to decide, on escalation. */
  escalateTo?: string;
}

/** What a turn knows of notifications, from its settings (recorded once at its start). */
export interface NotifySettings {
  routes: NotifyRouteSettings[];
  /** Named approver groups: the approver key names in each. */
  groups?: Record<string, string[]>;
  /** The web inbox's address, the base of each notification's link. */
  inboxUrl: string;
  /**
   * The longest one `sendNotification` may take by its channel's attempts, timeouts and pauses (the
   * slowest channel's): its start-to-close bound, after which a lost worker's send is retried.
   */
  sendBoundMs?: number;
}

/** Who was told of one waiting call, when, and what failed; in each pending entry of the `state` query. */
export interface WaitNotices {
  /** Each notification's receipt, in the order they came back. */
  notifications: NotificationReceipt[];
  /** Set once the wait was escalated: the approver group told, which may decide on it too. */
  escalatedTo?: string;
}
