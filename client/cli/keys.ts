// The approver key commands: a new Ed25519 key pair for signed decisions.
import type { Command } from 'commander';
import { generateApproverKeyPair } from '../../common/approver-keys';
import { CliError, print } from './context';

/** `keys generate`. */
export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('approver keys that sign decisions (approvals.publicKeysEnv, approvals.privateKeyEnv)');

  keys
    .command('generate')
    .description("print a new Ed25519 approver key pair as the worker's public entry and the operator's private entry")
    .argument('<name>', 'the key name, recorded as the approver of every decision it signs')
    .action((name: string) => {
      let pair: ReturnType<typeof generateApproverKeyPair>;
      try {
        pair = generateApproverKeyPair(name);
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      print({ name, ...pair }, () =>
        [
          "# The worker's approvals.publicKeysEnv variable (public; several entries are separated by commas):",
          pair.publicEntry,
          "# The operator's approvals.privateKeyEnv variable (secret: keep it out of config files and shell history):",
          pair.privateEntry,
        ].join('\n'),
      );
    });
}
