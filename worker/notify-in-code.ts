import type { z } from 'zod';
import type { TollgateConfig } from '../config/config-schema';
import { parseConfigSection } from '../config/config-error';
import { notifySchema } from '../notify/notify-config';

/** Notification channels, approver groups and routes given in code (`createWorker({ notify })`): the shape of config `approvals.notify`. */
export type NotifyInCode = z.input<typeof notifySchema>;

/**
 * The config with notifications given in code added to its `approvals.notify`: channels and groups
 * by name (a name in both is an error, so that nothing is replaced unseen), routes in code matched
 * before the config's. Checked as the config is, its errors naming `createWorker({ notify })`.
 */
export function withNotifyInCode(config: TollgateConfig, notify: NotifyInCode | undefined, where = 'createWorker'): TollgateConfig {
  if (notify === undefined) return config;
  const source = `${where}({ notify })`;
  if (typeof notify !== 'object' || notify === null || Array.isArray(notify))
    throw new Error(`${source}: expected an object { channels?, groups?, routes? }`);
  const configured = config.approvals.notify;
  for (const key of ['channels', 'groups'] as const) {
    const given = notify[key] ?? {};
    const twice = Object.keys(given).filter((name) => Object.prototype.hasOwnProperty.call(configured[key], name));
    if (twice.length > 0)
      throw new Error(`${source}: ${key} ${twice.join(', ')} also in the config's approvals.notify.${key}; name each once`);
  }
  // Checked together, so a route in code may name the config's channels and groups, and the other way round.
  const merged = parseConfigSection(
    { key: 'notify', schema: notifySchema },
    {
      channels: { ...configured.channels, ...notify.channels },
      groups: { ...configured.groups, ...notify.groups },
      routes: [...(notify.routes ?? []), ...configured.routes],
    },
    source,
  );
  return { ...config, approvals: { ...config.approvals, notify: merged } };
}
