// The stand-in commands: an approver names who may decide in their place for a period, signed by the approver's key.
import type { Command } from 'commander';
import { approverSigningKeyFromEnvironment } from '../../common/approver-keys';
import { parseDuration } from '../../common/duration';
import { signStandIn, type StandInStatement } from '../../common/stand-in';
import { loadConfig } from '../../config/load-config';
import { addStandIn, readStandIns } from '../../policies/stand-in-file';
import { formatTable } from '../format-table';
import { forTerminal } from '../terminal-text';
import { CliError, print } from './context';

const KEY_NAME = /^[A-Za-z0-9._@-]{1,64}$/;

/** A time given as ISO 8601 (or `now`), as the statement writes it. */
function timeOption(text: string, option: string): number {
  const at = text === 'now' ? Date.now() : Date.parse(text);
  if (Number.isNaN(at)) throw new CliError(`${option} must be a time such as 2026-01-01T12:00:00Z (or now), got ${JSON.stringify(text)}`);
  return at;
}

function standInTable(standIns: StandInStatement[]): string {
  return formatTable(
    ['APPROVER', 'STAND-IN', 'FROM', 'UNTIL'],
    standIns.map((statement) => [statement.approver, statement.standIn, statement.from, statement.until].map(forTerminal)),
  );
}

/** `stand-in add <name>` and `stand-in list`. */
export function registerStandInCommands(program: Command): void {
  const standIn = program
    .command('stand-in')
    .description("who may decide in an approver's place for a period, signed by the approver's key (approvals.standInsFile)");
  standIn
    .command('add')
    .description(
      'names a stand-in for you (the key of approvals.privateKeyEnv): they may decide where you may, from --from until --until or for --for; both names are recorded on each decision they take',
    )
    .argument('<name>', "the stand-in's approver key name (they sign their decisions with their own key)")
    .option('--from <time>', 'when it starts (ISO 8601, or now)', 'now')
    .option('--until <time>', 'when it ends (ISO 8601)')
    .option('--for <duration>', 'how long it lasts from --from (such as 3 days or 8h)')
    .action((name: string, options: { from: string; until?: string; for?: string }) => {
      const config = loadConfig();
      if (!KEY_NAME.test(name))
        throw new CliError(`the stand-in's name ${JSON.stringify(name)} is not an approver key name (letters, digits, ".", "_", "@", "-")`);
      if ((options.until === undefined) === (options.for === undefined))
        throw new CliError('give either --until <time> or --for <duration>');
      const from = timeOption(options.from, '--from');
      let until: number;
      if (options.for !== undefined) {
        const length = parseDuration(options.for);
        if (length === undefined || length <= 0)
          throw new CliError(`--for must be a duration such as 3 days or 8h, got ${JSON.stringify(options.for)}`);
        until = from + length;
      } else until = timeOption(options.until!, '--until');
      if (until <= from) throw new CliError('--until must be later than --from');
      let key: ReturnType<typeof approverSigningKeyFromEnvironment>;
      try {
        key = approverSigningKeyFromEnvironment(config.approvals.privateKeyEnv);
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      if (!key) throw new CliError('a stand-in is signed by your approver key: set approvals.privateKeyEnv to the variable holding it');
      if (key.keyId === name) throw new CliError(`${name} cannot stand in for themselves`);
      const statement = signStandIn(
        { approver: key.keyId, standIn: name, from: new Date(from).toISOString(), until: new Date(until).toISOString() },
        key.privateKey,
      );
      addStandIn(config.approvals.standInsFile, statement);
      print(statement, () =>
        [
          `${forTerminal(name)} may decide in place of ${forTerminal(key.keyId)} from ${statement.from} until ${statement.until}.`,
          `Recorded in ${forTerminal(config.approvals.standInsFile)}; turns started from now on take it.`,
        ].join('\n'),
      );
    });
  standIn
    .command('list')
    .description('the stand-ins whose period has not ended')
    .action(() => {
      const standIns = readStandIns(loadConfig().approvals.standInsFile);
      print(standIns, () => (standIns.length === 0 ? 'No stand-ins.' : standInTable(standIns)));
    });
}
