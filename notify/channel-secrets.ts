import { ConfigError } from '../config/config-error';

/**
 * The value of an environment variable a channel needs, or a {@link ConfigError} naming the
 * channel, the key and the variable, so a worker missing a secret stops at start with what to set.
 */
export function channelSecret({
  channel,
  key,
  variable,
  holds,
  env,
}: {
  channel: string;
  /** The config key that names the variable (`secretEnv`, `smtp.passwordEnv`). */
  key: string;
  variable: string;
  /** What the variable holds, for the message. */
  holds: string;
  env: NodeJS.ProcessEnv;
}): string {
  const value = env[variable];
  if (value === undefined || value === '')
    throw new ConfigError(
      `approvals.notify.channels.${channel}.${key}: the environment variable ${variable} is not set; it holds ${holds} (channel "${channel}")`,
    );
  return value;
}
