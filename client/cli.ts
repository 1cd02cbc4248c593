// The `tollgate` command line: start, follow, inspect and decide on turns; run a worker or the dev server.
// Each command group lives in client/cli/; this entry registers them and turns a failure into one line and an exit code.
import { CommanderError } from 'commander';
import { CliError, program } from './cli/context';
import { registerDecisionCommands } from './cli/decisions';
import { registerDeployCommands } from './cli/deploy';
import { registerGrantCommands } from './cli/grants';
import { registerInitCommand } from './cli/init';
import { registerIntentCommand } from './cli/intents';
import { registerKeyCommands } from './cli/keys';
import { registerReplayCommand } from './cli/replay';
import { registerServiceCommands } from './cli/services';
import { registerStandInCommands } from './cli/stand-ins';
import { registerHistoryCommand, registerTurnCommands } from './cli/turns';
import { forTerminal } from './terminal-text';

// The order of registration is the order `tollgate --help` lists the commands in.
registerTurnCommands(program);
registerDecisionCommands(program);
registerKeyCommands(program);
registerHistoryCommand(program);
registerIntentCommand(program);
registerGrantCommands(program);
registerStandInCommands(program);
registerServiceCommands(program);
registerInitCommand(program);
registerDeployCommands(program);
registerReplayCommand(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof CommanderError) {
    process.exit(error.exitCode);
  }
  const exitCode = CliError.isInstance(error) ? error.exitCode : 1;
  console.error(forTerminal(`tollgate: ${error instanceof Error ? error.message : String(error)}`));
  process.exit(exitCode);
});
