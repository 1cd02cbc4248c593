import { TollgateError } from '../common/tollgate-error';
import type { NotificationMessage } from './notification-message';

/**
 * One way people are told (a signed webhook, e-mail, Slack): built once when the worker starts,
 * with its secrets read from the environment, then asked to deliver each message once per attempt.
 */
export interface NotificationChannel {
  /** Its name in config `approvals.notify.channels`. */
  readonly name: string;
  readonly type: string;
  /** Whether the call's arguments go in its messages (config `arguments: true`). */
  readonly carriesArguments: boolean;
  /** The most attempts one notification gets. */
  readonly attempts: number;
  /** The bound of one attempt, in milliseconds. */
  readonly timeoutMs: number;
  /**
   * Delivers the message once; resolves when the receiver took it. Throws a {@link ChannelFailure}
   * (or anything else, taken as retryable) when it did not; stops when `signal` aborts.
   */
  send(message: NotificationMessage, options: { signal: AbortSignal; timestamp: Date }): Promise<void>;
}

/** A delivery that did not happen: why, and whether another attempt may succeed. */
export class ChannelFailure extends TollgateError {
  static override readonly marker = 'tollgate.error.ChannelFailure';
  override name = 'ChannelFailure';
  constructor(
    message: string,
    /** False when another attempt would fail alike (the receiver refused the message or the sign-in). */
    readonly retryable: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
