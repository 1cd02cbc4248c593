// The intents command: a task's write intents as the idempotency store holds them.
import type { Command } from 'commander';
import { loadConfig } from '../../config/load-config';
import type { IntentRecord } from '../../intents/intent-store';
import { formatTable } from '../format-table';
import { forTerminal } from '../terminal-text';
import { print } from './context';

/** The intents of a task as the `intents` command prints them. */
function intentTable(intents: IntentRecord[]): string {
  const rows = intents.map((intent) =>
    [intent.key, intent.tool, intent.state, intent.callId, intent.startedAt, intent.committedAt ?? '-'].map(forTerminal),
  );
  return formatTable(['KEY', 'TOOL', 'STATE', 'CALL', 'STARTED', 'COMMITTED'], rows);
}

/** `intents <taskId>`. */
export function registerIntentCommand(program: Command): void {
  program
    .command('intents')
    .description("a task's write intents in the idempotency store: key, tool, state (started or committed), call and times")
    .argument('<taskId>', "the business task (the turn input's taskId)")
    .action(async (taskId: string) => {
      // The store's drivers are loaded by this command only, not by every command.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { openConfiguredStore } = require('../../intents/open-store') as typeof import('../../intents/open-store');
      const store = openConfiguredStore(loadConfig());
      try {
        const intents = await store.listTask(taskId);
        const shown = intents.map(({ key, tool, state, callId, startedAt, committedAt }) => ({
          key,
          tool,
          state,
          callId,
          startedAt,
          ...(committedAt ? { committedAt } : {}),
        }));
        print(shown, () => (intents.length === 0 ? `No intents recorded for task ${forTerminal(taskId)}.` : intentTable(intents)));
      } finally {
        await store.close();
      }
    });
}
