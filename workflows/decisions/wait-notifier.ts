import { CancellationScope, isCancellation, patched, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import { approversOf } from '../../common/approver-groups';
import type {
  Notification,
  NotificationActivities,
  NotificationKind,
  NotificationReceipt,
  NotifyRouteSettings,
  NotifySettings,
} from '../../common/contract/notifications';
import type { TurnState } from '../../common/contract/turn';
import { notificationId } from '../../common/notification-id';
import { groupMembers, inboxItemLink, NOTIFY_BOUNDS, routesFor } from '../../common/notify-routes';
import type { DecisionRecord, Kind, Pending, WaitNotices } from './desk';
import { DECISION_KINDS } from './kinds';

/** The patch under which a turn tells people of its waits (turns recorded before it replay without it). */
export const NOTIFY_WAITS = 'tollgate-notify-waits';

/** How long one notification may take when the settings do not say (workers whose settings predate `sendBoundMs`). */
const DEFAULT_SEND_BOUND_MS = 2 * 60_000;

/**
 * The `sendNotification` activity, bounded by what its channels may take: the activity bounds its
 * own attempts and their timeouts, so this bound only ends a send whose worker was lost, which
 * Temporal then retries (on another worker) under the same id.
 */
function sendActivity(settings: NotifySettings): NotificationActivities['sendNotification'] {
  return proxyActivities<NotificationActivities>({
    startToCloseTimeout: settings.sendBoundMs ?? DEFAULT_SEND_BOUND_MS,
    retry: { maximumAttempts: 3, initialInterval: '1 second' },
    summary: 'tell the people who decide',
  }).sendNotification;
}

/** What a wait is about, as its notifications tell it. */
interface About {
  kind: Kind;
  subject: string;
  callId: string;
  tool: string;
  round: number;
  expiresAt: string;
  args?: unknown;
}

/** What the notifier keeps of one open wait. */
interface OpenWait {
  about: About;
  /** The reminders' and escalations' timers, cancelled when the wait closes. */
  timers: CancellationScope;
  /** Notices sent so far (0 the first, then each reminder and escalation in the order they fire). */
  notices: number;
  reminders: number;
  escalatedTo?: string;
}

/** What a wait of each kind is about: its call and tool (a resume's subject is its model step). */
function aboutOf<K extends Kind>(kind: K, pending: Pending<K>): About {
  const subject = DECISION_KINDS[kind].pendingSubject(pending);
  const { round, expiresAt } = pending;
  if (kind === 'resume') return { kind, subject, callId: `resume:${subject}`, tool: 'model stream', round, expiresAt };
  const call = pending as Pending<'approval' | 'resolution'>;
  return { kind, subject, callId: call.callId, tool: call.tool, round, expiresAt, args: call.args };
}

/**
 * Tells the people who decide when a call starts waiting for them, by the routes of the turn's
 * settings: one `sendNotification` activity per channel, started and never awaited by the wait
 * (a channel that fails or hangs costs the turn nothing), its receipt recorded on the waiting entry
 * and in the turn's list. While the wait is open, durable timers remind every `remindAfter` and
 * escalate after `escalateAfter` (the escalated group may then decide too); the wait's close cancels
 * them, and its expiry stays as it was.
 */
export class WaitNotifier implements WaitNotices {
  private readonly open = new Map<string, OpenWait>();
  private readonly send: NotificationActivities['sendNotification'];

  constructor(
    private readonly state: TurnState,
    private readonly settings: NotifySettings | undefined,
    /** Who may decide on a tool's calls, as the turn's approver groups say (empty: anyone). */
    private readonly deciders: (tool: string) => string[],
    /** Shows a change of the waiting entries (an escalation). */
    private readonly publish: (kind: Kind) => void,
    /** Agent names from the root turn down to this one, when the turn is a subagent's. */
    private readonly lineage: () => string[] | undefined = () => undefined,
  ) {
    this.send = sendActivity(settings ?? { routes: [], inboxUrl: '' });
  }

  /** Starts telling of a wait that opened; nothing when no route matches it. */
  opened<K extends Kind>(kind: K, pending: Pending<K>): void {
    const about = aboutOf(kind, pending);
    const routes = this.routesOf(about);
    // The patch is asked only where something is sent, so that turns without routes keep their histories as they were.
    if (routes.length === 0 || !patched(NOTIFY_WAITS)) return;
    const wait: OpenWait = { about, timers: new CancellationScope(), notices: 0, reminders: 0 };
    this.open.set(`${kind}:${about.subject}`, wait);
    this.tell(wait, routes, about.kind as NotificationKind);
    for (const route of routes) {
      wait.timers
        .run(() => this.timersOf(wait, route))
        .catch((error: unknown) => {
          if (!isCancellation(error)) throw error;
        });
    }
  }

  /** Stops the reminders and escalations of a wait that closed (decided, expired or ended otherwise). */
  closed(kind: Kind, subject: string): void {
    const key = `${kind}:${subject}`;
    const wait = this.open.get(key);
    if (!wait) return;
    this.open.delete(key);
    wait.timers.cancel();
  }

  /** The approver group a wait was escalated to, once it was: its members may decide on it too. */
  escalatedTo(kind: Kind, subject: string): string | undefined {
    return this.open.get(`${kind}:${subject}`)?.escalatedTo;
  }

  /** The members of an approver group. */
  membersOf(group: string): string[] {
    return groupMembers(this.settings, group);
  }

  private routesOf(about: About): NotifyRouteSettings[] {
    return routesFor(this.settings, { tool: about.tool, agent: this.state.agent?.name, deciders: this.deciders(about.tool) });
  }

  private async timersOf(wait: OpenWait, route: NotifyRouteSettings): Promise<void> {
    const { remindAfterMs, escalateAfterMs, escalateTo } = route;
    const reminding = async () => {
      for (let reminder = 1; reminder <= NOTIFY_BOUNDS.remindersPerWait; reminder++) {
        await sleep(remindAfterMs!, { summary: `reminder ${reminder} of ${wait.about.callId}` });
        if (wait.reminders >= NOTIFY_BOUNDS.remindersPerWait) return;
        wait.reminders++;
        this.tell(wait, [route], 'reminder');
      }
    };
    const escalating = async () => {
      await sleep(escalateAfterMs!);
      if (wait.escalatedTo !== undefined) return;
      wait.escalatedTo = escalateTo!;
      const entry = this.entryOf(wait.about);
      if (entry) entry.escalatedTo = escalateTo;
      this.publish(wait.about.kind);
      // The group is told through the routes that name it; through this route's channels when none does.
      const named = (this.settings?.routes ?? []).filter((candidate) => candidate.groups?.includes(escalateTo!));
      this.tell(wait, named.length > 0 ? named : [route], 'escalation');
    };
    await Promise.all([
      remindAfterMs !== undefined ? reminding() : undefined,
      escalateAfterMs !== undefined && escalateTo !== undefined ? escalating() : undefined,
    ]);
  }

  /** Starts one notification per channel of the routes (each channel once); their receipts come back on their own. */
  private tell(wait: OpenWait, routes: NotifyRouteSettings[], kind: NotificationKind): void {
    const { about } = wait;
    const notice = wait.notices++;
    const { workflowId } = workflowInfo();
    const channels = [...new Set(routes.flatMap((route) => route.channels))];
    const deciders = [...this.deciders(about.tool), ...(wait.escalatedTo ? this.membersOf(wait.escalatedTo) : [])];
    const lineage = this.lineage();
    for (const channel of channels) {
      const notification: Notification = {
        id: notificationId({ workflowId, callId: about.callId, waitKind: about.kind, round: about.round, channel, notice }),
        kind,
        round: about.round,
        tool: about.tool,
        ...(this.state.agent ? { agent: this.state.agent.name } : {}),
        ...(lineage ? { lineage } : {}),
        taskId: this.state.taskId,
        workflowId,
        callId: about.callId,
        deciders: [...new Set(deciders)],
        waitsUntil: about.expiresAt,
        link: inboxItemLink(this.settings!.inboxUrl, workflowId, about.callId),
        ...(about.args !== undefined ? { arguments: about.args } : {}),
        ...(notice > 0 ? { notice } : {}),
        ...(kind === 'escalation' ? { escalatedTo: wait.escalatedTo } : {}),
      };
      // Started outside the timers' scope: a decision ends the reminders, never a notification already on its way.
      CancellationScope.nonCancellable(() => this.send({ notification, channel }))
        .catch((error: unknown) => this.failed(notification, channel, error))
        .then((receipt) => this.received(about, { ...receipt, kind }));
    }
  }

  /** A receipt for a notification whose activity failed as a whole (its worker lost past every attempt). */
  private failed(notification: Notification, channel: string, error: unknown): NotificationReceipt {
    const message = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    return { channel, id: notification.id, status: 'failed', at: new Date(Date.now()).toISOString(), error: message, attempts: 0 };
  }

  /** Records a receipt on the waiting entry (while it waits) and in the turn's list of notifications, both bounded. */
  private received(about: About, receipt: NotificationReceipt): void {
    const entry = this.entryOf(about);
    if (entry) {
      const list = (entry.notifications ??= []);
      list.push(receipt);
      if (list.length > NOTIFY_BOUNDS.receiptsKept) list.splice(0, list.length - NOTIFY_BOUNDS.receiptsKept);
    }
    const all = (this.state.notifications ??= []);
    all.push({ ...receipt, callId: about.callId, round: about.round });
    if (all.length > NOTIFY_BOUNDS.receiptsKept) all.splice(0, all.length - NOTIFY_BOUNDS.receiptsKept);
  }

  /** The state's waiting entry of a wait, while it is still the same round. */
  private entryOf(about: About): Pending<Kind> | undefined {
    const declaration = DECISION_KINDS[about.kind] as (typeof DECISION_KINDS)[Kind];
    const entry = (declaration.waiting(this.state) as Array<Pending<Kind>>).find(
      (candidate) => (declaration.pendingSubject as (pending: Pending<Kind>) => string)(candidate) === about.subject,
    );
    return entry && entry.round === about.round ? entry : undefined;
  }
}

/**
 * The notifier of a turn's waits: the deciders of a call are its tool's approvers by the record's
 * groups as they are when it opens (a handoff changes them), none listed when anyone may.
 */
export function waitNotifier(state: TurnState, settings: NotifySettings, record: DecisionRecord): WaitNotifier {
  return new WaitNotifier(
    state,
    settings,
    (tool) => approversOf(record.groups, tool) ?? [],
    (kind) => record.host.publish(kind),
  );
}
