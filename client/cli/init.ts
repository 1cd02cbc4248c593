// `tollgate init`: a project of your own in the current folder, and the first command to run.
import type { Command } from 'commander';
import { scaffoldProject, ScaffoldConflictError, PROJECT_SCRIPTS } from '../init/scaffold-project';
import { CliError, print } from './context';

/** The first command a new project runs: the Temporal binaries into .tollgate/ (once), then a turn of its agent. */
export const FIRST_COMMAND = 'npx tollgate setup && npm run turn';

/** What each scaffolded file is for, as `tollgate init` lists them. */
const PURPOSES: Record<string, string> = {
  'tollgate.config.yaml': 'the config: server, models, tool overrides',
  'src/tools.mts': 'lookup_order (a read) and refund_order (an irreversible write)',
  'src/agent.mts': 'the support agent: instructions and its tools',
  'src/worker.mts': 'the worker that serves them (npm run worker)',
  'src/turn.mts': 'one turn of the agent, the refund approved at the terminal (npm run turn)',
  'test/support.test.mts': 'the tools on the time-skipping server, executions counted (npm test)',
  '.gitignore': 'keeps .tollgate/ (the state) out of git',
  'package.json': `scripts ${Object.keys(PROJECT_SCRIPTS).join(', ')}`,
};

/** `init`: scaffolds the project, overwriting nothing. */
export function registerInitCommand(program: Command): void {
  program
    .command('init')
    .description('scaffold a project in this folder: config, an agent with two tools, a worker, a turn script, a test')
    .action(() => {
      let report;
      try {
        report = scaffoldProject(process.cwd());
      } catch (error) {
        if (ScaffoldConflictError.isInstance(error)) throw new CliError(error.message);
        throw error;
      }
      const { written, updated, missingDependencies } = report;
      print({ ...report, firstCommand: FIRST_COMMAND }, () => {
        const width = Math.max(...[...written, ...updated].map((file) => file.length));
        const line = (file: string) => `  ${file.padEnd(width)}  ${PURPOSES[file] ?? ''}`.trimEnd();
        return [
          `A Tollgate project in ${report.folder}:`,
          ...written.map(line),
          ...(updated.length > 0 ? ['Added to:', ...updated.map(line)] : []),
          ...(missingDependencies.length > 0
            ? ['', `package.json does not list ${missingDependencies.join(', ')}: npm install ${missingDependencies.join(' ')}`]
            : []),
          '',
          'First, a turn of the support agent on the dev server (the Temporal binaries go to .tollgate/ once):',
          `  ${FIRST_COMMAND}`,
          'Then `npm test`; the guide is "Your first agent" (docs/first-agent.md).',
        ].join('\n');
      });
    });
}
