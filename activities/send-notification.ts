import { Context } from '@temporalio/activity';
import type { NotificationReceipt, SendNotificationInput } from '../common/contract/notifications';
import type { Redactor } from '../hardened/redact';
import type { IdempotencyStore } from '../intents/intent-store';
import { ChannelFailure, type NotificationChannel } from '../notify/notification-channel';
import { notificationMessage, oneLine, type NotificationMessage } from '../notify/notification-message';
import { NOTIFY_DEFAULTS } from '../notify/notify-config';

/** What the `sendNotification` activity is built from. */
export interface SendNotificationDependencies {
  /** The worker's channels, by name (built at start from config `approvals.notify.channels`). */
  channels: ReadonlyMap<string, NotificationChannel>;
  /** Where each delivered id is recorded, beside the intents; a store without the record lets a re-run send again. */
  store: IdempotencyStore;
  redactor: Redactor;
  /** Where a store failure is told (the send goes on: the receiver's dedupe by id covers a second delivery). */
  warn?: (line: string) => void;
  /** The pause before the second attempt; it doubles for each further one. */
  firstPauseMs?: number;
}

/** The most a failure's reason says. */
const MAX_REASON_CHARS = 300;

/** The activity's cancellation, when it runs as one (a direct call in a test has none). */
function activitySignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * One attempt, bounded by the channel's timeout whatever the channel does: the signal it is given
 * aborts at the bound, and the attempt ends then even if the channel's own work does not stop.
 */
async function attempt(channel: NotificationChannel, message: NotificationMessage, cancelled: AbortSignal | undefined): Promise<void> {
  const controller = new AbortController();
  const onCancel = () => controller.abort(cancelled?.reason);
  cancelled?.addEventListener('abort', onCancel, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      controller.abort(new Error('timed out'));
      reject(new ChannelFailure(`no answer within ${channel.timeoutMs} ms`, true));
    }, channel.timeoutMs);
  });
  const sending = channel.send(message, { signal: controller.signal, timestamp: new Date() });
  // A send that fails after the bound already decided must not surface as an unhandled rejection.
  sending.catch(() => undefined);
  try {
    await Promise.race([sending, bound]);
  } catch (error) {
    if (controller.signal.aborted && !ChannelFailure.isInstance(error))
      throw new ChannelFailure(`no answer within ${channel.timeoutMs} ms`, true, { cause: error });
    throw error;
  } finally {
    clearTimeout(timer);
    cancelled?.removeEventListener('abort', onCancel);
  }
}

/**
 * The `sendNotification` activity: tells one channel of one wait, at most once per notification
 * id. An id the store recorded as delivered is not sent again (`skipped`, with when it went);
 * otherwise up to the channel's `attempts`, each bounded by its `timeout`, with pauses doubling
 * between them, stopping at a refusal that another attempt would meet alike. It never throws for a
 * channel's failure or a bad notification: it answers `failed` with the reason, so the turn that
 * started it records who was not told and goes on. A delivered id is recorded before it answers;
 * a worker lost between the delivery and the record sends it again on the activity's retry, under
 * the same id, which the receiver drops (`webhook-id`, `Message-ID`).
 */
export function createSendNotification({
  channels,
  store,
  redactor,
  warn = (line) => console.warn(line),
  firstPauseMs = NOTIFY_DEFAULTS.firstPauseMs,
}: SendNotificationDependencies): (input: SendNotificationInput) => Promise<NotificationReceipt> {
  const reason = (text: string) => oneLine(redactor.text(text), MAX_REASON_CHARS);
  const send = async (
    input: SendNotificationInput,
    failed: (error: string, attempts: number) => NotificationReceipt,
  ): Promise<NotificationReceipt> => {
    const name = input.channel;
    const channel = channels.get(name);
    if (!channel) {
      const known = [...channels.keys()].join(', ') || 'none';
      return failed(`no channel "${name}" on this worker (approvals.notify.channels: ${known})`, 0);
    }
    const message = notificationMessage(input.notification, { carriesArguments: channel.carriesArguments, redactor });
    if ('problem' in message) return failed(message.problem, 0);
    try {
      const sent = await store.notificationSent?.(message.id);
      if (sent) return { channel: name, id: message.id, status: 'skipped', at: sent.sentAt, attempts: 0 };
    } catch (error) {
      warn(reason(`notification ${message.id} to "${name}": could not read the store, sending anyway: ${(error as Error)?.message}`));
    }
    const cancelled = activitySignal();
    let last = 'not sent';
    let attempts = 0;
    while (attempts < channel.attempts) {
      if (attempts > 0) await pause(firstPauseMs * 2 ** (attempts - 1), cancelled);
      if (cancelled?.aborted) return failed(`${last}; the activity was cancelled`, attempts);
      attempts++;
      try {
        await attempt(channel, message, cancelled);
      } catch (error) {
        last = ChannelFailure.isInstance(error) ? error.message : `${(error as Error)?.message ?? String(error)}`;
        if (ChannelFailure.isInstance(error) && !error.retryable) break;
        continue;
      }
      const sentAt = new Date().toISOString();
      const kind = input.notification.kind;
      try {
        await store.recordNotificationSent?.({
          id: message.id,
          channel: name,
          workflowId: input.notification.workflowId,
          callId: input.notification.callId,
          kind,
          sentAt,
          attempts,
        });
      } catch (error) {
        warn(reason(`notification ${message.id} to "${name}" was sent, but the store could not record it: ${(error as Error)?.message}`));
      }
      return { channel: name, id: message.id, status: 'sent', at: sentAt, attempts };
    }
    return failed(`${channel.type} channel "${name}": ${last}`, attempts);
  };
  return async (input) => {
    const id = typeof input?.notification?.id === 'string' ? oneLine(input.notification.id, 80) : '';
    const name = typeof input?.channel === 'string' ? input.channel : '';
    const failed = (error: string, attempts: number): NotificationReceipt => ({
      channel: oneLine(name, 80),
      id,
      status: 'failed',
      at: new Date().toISOString(),
      error: reason(error),
      attempts,
    });
    if (typeof input !== 'object' || input === null) return failed('sendNotification: expected { notification, channel }', 0);
    try {
      return await send({ notification: input.notification, channel: name }, failed);
    } catch (error) {
      // Nothing above throws by design; whatever does is reported as the channel's failure, never the turn's.
      return failed(`sendNotification failed: ${(error as Error)?.message ?? String(error)}`, 0);
    }
  };
}
