// What every command shares: the root program and its --json flag, printing, the connection, and the one-line failures.
import { WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { Command } from 'commander';
import type { TollgateConfig } from '../../config/config-schema';
import { loadConfig } from '../../config/load-config';
import { probeServer } from '../../connection/temporal-connection';
import { forTerminal } from '../terminal-text';
import { TollgateClient, TurnEndedError } from '../tollgate-client';
import { TollgateError } from '../../common/tollgate-error';

/** A failure the CLI reports as one line, with its exit code. */
export class CliError extends TollgateError {
  static override readonly marker = 'tollgate.error.CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export const program = new Command('tollgate')
  .description('Run and inspect Tollgate agent turns on Temporal.')
  .option('--json', 'print machine-readable JSON instead of text')
  .showHelpAfterError()
  .exitOverride();

export function json(): boolean {
  return Boolean(program.opts().json);
}

/** Prints JSON, or the text with every control and invisible character escaped (it may quote a turn's text anywhere). */
export function print(value: unknown, text: () => string): void {
  console.log(json() ? JSON.stringify(value, null, 2) : forTerminal(text()));
}

export async function connect(): Promise<{ config: TollgateConfig; client: TollgateClient }> {
  const config = loadConfig();
  const probe = await probeServer(config.temporal.address, config.temporalProfile);
  if (probe !== 'temporal') {
    throw new CliError(
      `no Temporal server answers at ${config.temporal.address}; start one with \`tollgate server start\` or set TEMPORAL_ADDRESS`,
      2,
    );
  }
  return { config, client: await TollgateClient.connect(config) };
}

export async function withClient<T>(work: (client: TollgateClient, config: TollgateConfig) => Promise<T>): Promise<T> {
  const { config, client } = await connect();
  try {
    return await work(client, config);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError)
      throw new CliError(`no turn with workflow id ${error.workflowId} in namespace ${config.temporal.namespace}`);
    if (TurnEndedError.isInstance(error)) throw new CliError(`rejected: ${error.message}`);
    if (error instanceof WorkflowUpdateFailedError) throw new CliError(`rejected: ${error.cause?.message ?? error.message}`);
    if (error instanceof WorkflowFailedError) {
      let cause: Error | undefined = error.cause;
      while (cause?.cause instanceof Error) cause = cause.cause;
      throw new CliError(`the turn failed: ${cause?.message ?? error.message}`);
    }
    throw error;
  } finally {
    await client.close();
  }
}
