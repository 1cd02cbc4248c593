// Notifications as a turn builds them, for the tests of the channels and the sending activity.
import type { Notification } from '../../common/contract/notifications';
import { notificationId } from '../../common/notification-id';
import { inboxItemLink } from '../../common/notify-routes';
import { createRedactor, type Redactor } from '../../hardened/redact';

/** The inbox the sample links point into. */
export const SAMPLE_INBOX = 'https://inbox.example.com';

/** A notification of an approval wait on `channel`, as the turn builds it; `overrides` replace fields (the id follows the parts). */
export function sampleNotification(channel: string, overrides: Partial<Notification> & { notice?: number } = {}): Notification {
  const workflowId = overrides.workflowId ?? `turn-${Math.random().toString(36).slice(2)}`;
  const callId = overrides.callId ?? 'call-1';
  const round = overrides.round ?? 1;
  const id = notificationId({ workflowId, callId, waitKind: 'approval', round, channel, notice: overrides.notice ?? 0 });
  return {
    id,
    kind: 'approval',
    round,
    tool: 'send_email',
    agent: 'support',
    taskId: 'task-7',
    workflowId,
    callId,
    deciders: ['alice', 'bob'],
    waitsUntil: '2026-12-06T12:00:00.000Z',
    link: inboxItemLink(SAMPLE_INBOX, workflowId, callId),
    arguments: { to: 'customer@example.com', subject: 'Your refund', body: 'Dear customer, …' },
    ...overrides,
  };
}

/** The worker's redactor with one secret of its own, so a test can show it never leaves. */
export function sampleRedactor(secret = 'worker-secret-value-1234'): Redactor {
  return createRedactor([], { secrets: [secret] });
}
