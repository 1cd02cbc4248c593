// The config of the notification kill test's workers, the one in a process of its own and the one in the test's: the same
// channel, route, store and task queue, so either may take the other's work.
import type { TollgateConfig } from '../../config/config-schema';
import { testConfig } from './test-config';

/** One webhook channel (`hook-a`, one attempt of 1 s) told of every send_message wait; the secret is in TOLLGATE_NOTIFY_WORKER_SECRET. */
export function notifyWorkerConfig(settings: {
  address: string;
  taskQueue: string;
  workspace: string;
  sqliteFile: string;
  hookUrl: string;
}): TollgateConfig {
  return testConfig({
    temporal: { address: settings.address, taskQueue: settings.taskQueue },
    workspace: settings.workspace,
    store: { sqliteFile: settings.sqliteFile },
    approvals: {
      notify: {
        channels: {
          'hook-a': { type: 'webhook', url: settings.hookUrl, secretEnv: 'TOLLGATE_NOTIFY_WORKER_SECRET', timeout: '1s', attempts: 1 },
        },
        routes: [{ tools: ['send_message'], channels: ['hook-a'] }],
      },
    },
  });
}
