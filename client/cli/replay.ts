// The replay command: histories replayed on the current workflow code, each one that would break reported.
import { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { loadConfig } from '../../config/load-config';
import { connectClient, probeServer } from '../../connection/temporal-connection';
import type { HistorySource } from '../replay-histories';
import { forTerminal } from '../terminal-text';
import { CliError, print } from './context';

/** The replay code and the bundler it needs, loaded only by `tollgate replay` so that the other commands start fast. */
function replayCode(): typeof import('../replay-histories') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../replay-histories');
}

/** The histories `tollgate replay` was given: files, or the workflows a visibility query finds on the configured server. */
async function replaySources(
  files: string[],
  query: string | undefined,
): Promise<{ sources: AsyncIterable<HistorySource> | HistorySource[]; close?: () => Promise<void> }> {
  const { historiesFromQuery, readHistoryFile } = replayCode();
  if (query === undefined) {
    try {
      return { sources: files.map((file) => readHistoryFile(file)) };
    } catch (error) {
      throw new CliError((error as Error).message);
    }
  }
  const config = loadConfig();
  if ((await probeServer(config.temporal.address, config.temporalProfile)) !== 'temporal') {
    throw new CliError(`no Temporal server answers at ${config.temporal.address}; set TEMPORAL_ADDRESS or temporal.address`, 2);
  }
  const connection = await connectClient(config);
  const client = new Client({ connection, namespace: config.temporal.namespace });
  return { sources: historiesFromQuery(client, query), close: () => connection.close() };
}

/** `replay [files...]` or `replay --query`. */
export function registerReplayCommand(program: Command): void {
  program
    .command('replay')
    .description(
      'replay histories on the current workflow code and report each one that would break; the check to run before deploying a worker',
    )
    .argument('[files...]', 'exported histories (`temporal workflow show --output json`)')
    .option(
      '--query <visibility query>',
      'replay the workflows this query finds on the configured server, e.g. "TollgateAwaitingApproval = true"',
    )
    .option('--workflows <path>', "the workflow code to replay on: a folder with index.ts, or a file (default: this Tollgate's workflows)")
    .action(async (files: string[], options: { query?: string; workflows?: string }) => {
      if (files.length > 0 === (options.query !== undefined)) throw new CliError('give history files or --query, not both and not neither');
      const { replayHistories, workflowsEntry } = replayCode();
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      let workflowsPath = (require('../../worker/create-worker') as typeof import('../../worker/create-worker')).WORKFLOWS_PATH;
      try {
        if (options.workflows) workflowsPath = workflowsEntry(options.workflows);
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      const { sources, close } = await replaySources(files, options.query);
      let outcomes;
      try {
        outcomes = await replayHistories(workflowsPath, sources);
      } finally {
        await close?.();
      }
      const breaking = outcomes.filter((outcome) => outcome.verdict !== 'replays');
      print(outcomes, () =>
        [
          ...outcomes.map((outcome) =>
            forTerminal(
              outcome.verdict === 'replays'
                ? `replays  ${outcome.source}`
                : `${outcome.verdict === 'breaks' ? 'BREAKS' : 'ERROR '}   ${outcome.source} (${outcome.workflowId}): ${outcome.message}`,
            ),
          ),
          outcomes.length === 0
            ? 'No history to replay.'
            : `${outcomes.length} history(ies) replayed: ${outcomes.length - breaking.length} replay, ${breaking.length} would break.`,
        ].join('\n'),
      );
      if (breaking.length > 0) process.exitCode = 1;
    });
}
