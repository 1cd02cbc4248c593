import type { NotifyRouteSettings, NotifySettings } from '../common/contract/notifications';
import { toMilliseconds } from '../common/duration';
import type { TollgateConfig } from '../config/config-schema';
import { NOTIFY_DEFAULTS, type NotifyConfig } from '../notify/notify-config';

/** Hosts a passkey cannot be bound to by address: the inbox's link names them `localhost`, as the inbox itself does. */
const LOOPBACK = new Set(['127.0.0.1', '::1', '0.0.0.0', '::', 'localhost']);

/** The web inbox's address as people open it: config `inbox.publicUrl`, else the inbox's own host and port. */
export function inboxPublicUrl(inbox: TollgateConfig['inbox']): string {
  if (inbox.publicUrl) return inbox.publicUrl.replace(/\/+$/, '');
  const host = LOOPBACK.has(inbox.host) ? 'localhost' : inbox.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${inbox.port}`;
}

/** Room beyond a channel's own bound, so that a worker that is alive always answers before Temporal gives the send up. */
const SEND_MARGIN_MS = 5_000;

/** The longest one notification to any of the channels may take: every attempt to its timeout, and the doubling pauses between them. */
export function sendBoundOf(notify: NotifyConfig): number {
  const bounds = Object.values(notify.channels).map(({ attempts, timeout }) => {
    const pauses = NOTIFY_DEFAULTS.firstPauseMs * (2 ** (attempts - 1) - 1);
    return attempts * toMilliseconds(timeout) + pauses;
  });
  return Math.max(0, ...bounds) + SEND_MARGIN_MS;
}

/**
 * What a turn needs of config `approvals.notify`: its routes with their timers in milliseconds, the
 * named approver groups and the inbox's address for the links. The channels (and their secrets)
 * stay on the worker, which sends. Nothing when no route is set.
 */
export function notifySettingsOf(notify: NotifyConfig | undefined, inbox: TollgateConfig['inbox']): NotifySettings | undefined {
  if (!notify || notify.routes.length === 0) return undefined;
  const routes = notify.routes.map(({ tools, agents, groups, channels, remindAfter, escalateAfter, escalateTo }) => {
    const route: NotifyRouteSettings = { channels: [...channels] };
    if (tools) route.tools = [...tools];
    if (agents) route.agents = [...agents];
    if (groups) route.groups = [...groups];
    if (remindAfter !== undefined) route.remindAfterMs = toMilliseconds(remindAfter);
    if (escalateAfter !== undefined && escalateTo !== undefined)
      Object.assign(route, { escalateAfterMs: toMilliseconds(escalateAfter), escalateTo });
    return route;
  });
  return {
    routes,
    ...(Object.keys(notify.groups).length > 0 ? { groups: notify.groups } : {}),
    inboxUrl: inboxPublicUrl(inbox),
    sendBoundMs: sendBoundOf(notify),
  };
}
