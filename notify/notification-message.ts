import { canonicalJson } from '../common/canonical-json';
import type { Notification, NotificationKind } from '../common/contract/notifications';
import { displayText } from '../common/display-text';
import type { Redactor } from '../hardened/redact';

/** The most characters of one field (a tool, an agent, a task, a decider) a message shows. */
export const MAX_FIELD_CHARS = 200;
/** The most characters of the arguments' JSON text a message carries; the rest is counted, not sent. */
export const MAX_ARGUMENT_CHARS = 4_000;
/** The most deciders a message names; the rest are counted. */
export const MAX_DECIDERS = 20;
/** The most characters of a link. */
export const MAX_LINK_CHARS = 2_000;

/** The fields of a notification as every channel shows them: redacted, escaped, each on one line, bounded. */
export interface NotificationFields {
  kind: NotificationKind;
  round: number;
  notice?: number;
  tool: string;
  agent?: string;
  lineage?: string[];
  taskId: string;
  workflowId: string;
  callId: string;
  deciders: string[];
  /** Deciders left out past {@link MAX_DECIDERS}. */
  moreDeciders?: number;
  waitsUntil: string;
  escalatedTo?: string;
  /** The arguments' JSON text (only on a channel that carries them): redacted, escaped, at most {@link MAX_ARGUMENT_CHARS}. */
  arguments?: string;
  /** Characters of the arguments' JSON text left out. */
  argumentsCut?: number;
}

/** One notification as the channels send it: the same words on every channel. */
export interface NotificationMessage {
  id: string;
  /** One line: no CR, LF or any other hidden character reaches it raw. */
  subject: string;
  text: string;
  html: string;
  /** The inbox item: an http(s) URL as the URL parser writes it (no whitespace, no control character). */
  link: string;
  fields: NotificationFields;
}

/** What the kind of a notification asks of the person. */
const HEADLINES: Record<NotificationKind, string> = {
  approval: 'Approval needed',
  resolution: 'Outcome unknown: your word is needed',
  resume: 'A cut-off reply waits for your decision',
  reminder: 'Reminder: still waiting for a decision',
  escalation: 'Escalated: a decision is needed',
};

/** A trailing mark cut in half by a bound (`\u{20`): removed, so no mark is shown broken. */
const BROKEN_MARK = /\\(?:u(?:\{[0-9A-F]*)?)?$/;

/**
 * Text of a model or a tool made safe for one line of a message: hidden characters, tabs and line
 * breaks shown as their marks (`\u{D}`, `\u{A}`), at most `max` characters (`…` where cut).
 */
export function oneLine(text: string, max = MAX_FIELD_CHARS): string {
  const shown = displayText(text).replace(/[\n\t]/g, (character) => `\\u{${character.codePointAt(0)!.toString(16).toUpperCase()}}`);
  if (shown.length <= max) return shown;
  return `${shown.slice(0, max - 1).replace(BROKEN_MARK, '')}…`;
}

/** Text for HTML: the five characters that could open markup or end an attribute, escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** Why a notification cannot be sent as it is, naming the field; nothing when it can. */
function problemOf(notification: Notification): string | undefined {
  if (typeof notification !== 'object' || notification === null) return 'notification: expected an object';
  if (typeof notification.id !== 'string' || !/^[0-9a-f]{64}$/.test(notification.id))
    return 'notification.id: expected 64 lower-case hex digits (notificationId)';
  if (!Object.prototype.hasOwnProperty.call(HEADLINES, notification.kind))
    return `notification.kind: expected one of ${Object.keys(HEADLINES).join(', ')}`;
  for (const field of ['tool', 'taskId', 'workflowId', 'callId', 'waitsUntil', 'link'] as const)
    if (typeof notification[field] !== 'string' || notification[field].length === 0)
      return `notification.${field}: expected a non-empty string`;
  if (!Number.isInteger(notification.round) || notification.round < 0) return 'notification.round: expected a whole number';
  if (!Array.isArray(notification.deciders) || notification.deciders.some((decider) => typeof decider !== 'string'))
    return 'notification.deciders: expected a list of names';
  if (
    notification.lineage !== undefined &&
    (!Array.isArray(notification.lineage) || notification.lineage.some((agent) => typeof agent !== 'string'))
  )
    return 'notification.lineage: expected a list of agent names';
  for (const field of ['agent', 'escalatedTo'] as const)
    if (notification[field] !== undefined && typeof notification[field] !== 'string') return `notification.${field}: expected a string`;
  return undefined;
}

/** The link as it is sent: an http(s) URL re-written by the URL parser, or why not. */
function safeLink(link: string): { link: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return { problem: 'notification.link: expected an http(s) URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return { problem: `notification.link: expected an http(s) URL, got ${oneLine(url.protocol, 20)}` };
  if (url.username || url.password) return { problem: 'notification.link: a link must not carry a user or password' };
  if (url.href.length > MAX_LINK_CHARS) return { problem: `notification.link: longer than ${MAX_LINK_CHARS} characters` };
  return { link: url.href };
}

/** The arguments' JSON text as a channel that carries them sends it: redacted, escaped, bounded. */
function argumentsText(value: unknown, redactor: Redactor): { text: string; cut?: number } {
  // canonicalJson writes without recursion: arguments nested thousands deep do not overflow the stack.
  const json = displayText(canonicalJson(redactor.value(value).value));
  if (json.length <= MAX_ARGUMENT_CHARS) return { text: json };
  const text = json.slice(0, MAX_ARGUMENT_CHARS).replace(BROKEN_MARK, '');
  return { text, cut: json.length - text.length };
}

/**
 * A notification as the channels send it, or why it cannot be sent (the field named). Every text
 * passes the worker's redaction and the shared display rules (common/display-text.ts), one line
 * each and bounded; the arguments only where `carriesArguments`.
 */
export function notificationMessage(
  notification: Notification,
  { carriesArguments, redactor }: { carriesArguments: boolean; redactor: Redactor },
): NotificationMessage | { problem: string } {
  const problem = problemOf(notification);
  if (problem) return { problem };
  const linked = safeLink(notification.link);
  if ('problem' in linked) return linked;
  const line = (text: string, max = MAX_FIELD_CHARS) => oneLine(redactor.text(text), max);
  const fields: NotificationFields = {
    kind: notification.kind,
    round: notification.round,
    ...(Number.isInteger(notification.notice) ? { notice: notification.notice } : {}),
    tool: line(notification.tool),
    ...(notification.agent ? { agent: line(notification.agent) } : {}),
    ...(notification.lineage?.length ? { lineage: notification.lineage.slice(0, MAX_DECIDERS).map((agent) => line(agent, 64)) } : {}),
    taskId: line(notification.taskId),
    workflowId: line(notification.workflowId),
    callId: line(notification.callId),
    deciders: notification.deciders.slice(0, MAX_DECIDERS).map((decider) => line(decider, 64)),
    ...(notification.deciders.length > MAX_DECIDERS ? { moreDeciders: notification.deciders.length - MAX_DECIDERS } : {}),
    waitsUntil: line(notification.waitsUntil, 64),
    ...(notification.escalatedTo ? { escalatedTo: line(notification.escalatedTo, 64) } : {}),
  };
  if (carriesArguments && notification.arguments !== undefined) {
    const shown = argumentsText(notification.arguments, redactor);
    fields.arguments = shown.text;
    if (shown.cut) fields.argumentsCut = shown.cut;
  }
  const headline =
    fields.kind === 'escalation' && fields.escalatedTo
      ? `Escalated to ${fields.escalatedTo}: a decision is needed`
      : HEADLINES[fields.kind];
  const subject = oneLine(
    `[Tollgate] ${headline}: ${fields.tool}${fields.agent ? ` (agent ${fields.agent})` : ''} — task ${fields.taskId}`,
    240,
  );
  const rows = messageRows(fields);
  const note = 'Following the link decides nothing: it opens the item, where you sign in and sign your decision.';
  const text = [
    `${headline}.`,
    '',
    ...rows.map(([label, value]) => `${label}: ${value}`),
    '',
    `Open the item: ${linked.link}`,
    note,
    ...(fields.arguments !== undefined
      ? [
          '',
          'Arguments (redacted):',
          fields.arguments,
          ...(fields.argumentsCut ? [`… ${fields.argumentsCut} characters more, not sent`] : []),
        ]
      : []),
    '',
  ].join('\n');
  const html = [
    '<!doctype html><html><body>',
    `<p><strong>${escapeHtml(headline)}.</strong></p>`,
    '<table>',
    ...rows.map(([label, value]) => `<tr><th align="left">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`),
    '</table>',
    `<p><a href="${escapeHtml(linked.link)}">Open the item in the inbox</a></p>`,
    `<p>${escapeHtml(note)}</p>`,
    ...(fields.arguments !== undefined
      ? [
          '<p>Arguments (redacted):</p>',
          `<pre>${escapeHtml(fields.arguments)}</pre>`,
          ...(fields.argumentsCut ? [`<p>… ${fields.argumentsCut} characters more, not sent</p>`] : []),
        ]
      : []),
    '</body></html>',
  ].join('\n');
  return { id: notification.id, subject, text, html, link: linked.link, fields };
}

/** The labelled lines of a message, in the order every channel shows them. */
export function messageRows(fields: NotificationFields): Array<[string, string]> {
  return [
    ['Tool', fields.tool],
    ...(fields.agent ? [['Agent', fields.agent] as [string, string]] : []),
    ...(fields.lineage?.length ? [['Agents from the root', fields.lineage.join(' › ')] as [string, string]] : []),
    ['Task', fields.taskId],
    ['Turn', fields.workflowId],
    ['Call', `${fields.callId} (round ${fields.round})`],
    [
      'Who may decide',
      fields.deciders.length === 0
        ? 'any approver'
        : `${fields.deciders.join(', ')}${fields.moreDeciders ? ` and ${fields.moreDeciders} more` : ''}`,
    ],
    ['Waits until', fields.waitsUntil],
    ...(fields.escalatedTo ? [['Escalated to', fields.escalatedTo] as [string, string]] : []),
  ];
}
