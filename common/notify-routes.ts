import { toolMatches } from './approver-groups';
import type { NotifyRouteSettings, NotifySettings } from './contract/notifications';

/** How much telling one wait may cause, and how much of it a turn keeps (history stays bounded). */
export const NOTIFY_BOUNDS = {
  /** Reminders of one wait, over all its routes; past them the wait is left to its expiry. */
  remindersPerWait: 24,
  /** Receipts kept on one waiting entry, and in the turn's list (the newest). */
  receiptsKept: 100,
} as const;

/** What a wait is matched by: its tool, the agent whose turn asks, and who may decide on it. */
export interface WaitSubject {
  tool: string;
  agent?: string;
  /** Approver key names who may decide; empty when any approver may. */
  deciders: string[];
}

/** Whether one route matches a wait: each list the route gives must name the wait (a list left out matches any). */
function matches(route: NotifyRouteSettings, subject: WaitSubject, groups: Record<string, string[]>): boolean {
  if (route.tools && !route.tools.some((pattern) => toolMatches(pattern, subject.tool))) return false;
  if (route.agents && !(subject.agent !== undefined && route.agents.includes(subject.agent))) return false;
  if (route.groups) {
    const members = route.groups.flatMap((group) => groups[group] ?? []);
    if (!subject.deciders.some((decider) => members.includes(decider))) return false;
  }
  return true;
}

/**
 * The routes that match a wait, in the order the settings list them (config `approvals.notify.routes`
 * and `createWorker({ notify })`). Pure: it runs in workflow code.
 */
export function routesFor(settings: NotifySettings | undefined, subject: WaitSubject): NotifyRouteSettings[] {
  if (!settings) return [];
  const groups = settings.groups ?? {};
  return settings.routes.filter((route) => matches(route, subject, groups));
}

/** The members of a named approver group (none when it is not named). */
export function groupMembers(settings: NotifySettings | undefined, group: string): string[] {
  const groups = settings?.groups ?? {};
  return Object.prototype.hasOwnProperty.call(groups, group) ? groups[group] : [];
}

/** The link to a waiting item in the web inbox; opening it decides nothing. */
export function inboxItemLink(inboxUrl: string, workflowId: string, callId: string): string {
  return `${inboxUrl.replace(/\/+$/, '')}/#/item/${encodeURIComponent(workflowId)}/${encodeURIComponent(callId)}`;
}
