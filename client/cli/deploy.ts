// The deploy commands: where each build of the worker's deployment stands, and promoting one.
import type { Command } from 'commander';
import type { TollgateConfig } from '../../config/config-schema';
import { deploymentNameOf } from '../../worker/deployment';
import { deploymentStatus, DeploymentNotFoundError, promoteBuild, type DeploymentStatus } from '../deployments';
import { formatTable } from '../format-table';
import { CliError, print, withClient } from './context';

/** The deployment the commands speak of: --deployment, else the config's (its name, else the task queue's). */
function deploymentOption(config: TollgateConfig, given?: string): string {
  return given ?? deploymentNameOf(config);
}

function describeBuilds(status: DeploymentStatus): string {
  if (status.builds.length === 0) return `Deployment ${status.deploymentName} has no builds yet.`;
  const rows = status.builds.map((build) => [
    build.buildId,
    build.state + (build.rampPercent !== undefined ? ` ${build.rampPercent}%` : ''),
    String(build.openTurns),
    String(build.openConversations),
    String(build.waitingForPerson),
    build.oldestWait ? `${build.oldestWait.since} (${build.oldestWait.kind}, ${build.oldestWait.workflowId})` : '-',
    build.safeToStop ? 'yes' : 'no',
  ]);
  return [
    `Deployment ${status.deploymentName}:`,
    formatTable(['BUILD', 'STATE', 'TURNS', 'CONVERSATIONS', 'WAITING FOR A PERSON', 'OLDEST WAIT', 'SAFE TO STOP'], rows),
  ].join('\n');
}

/** `deploy status` and `deploy promote`. */
export function registerDeployCommands(program: Command): void {
  const deploy = program
    .command('deploy')
    .description("the builds of this worker's deployment (temporal.deployment): where each stands, what still runs on it, promotion");

  deploy
    .command('status')
    .description(
      'each build: current, ramping, draining, drained or inactive; its open turns, those waiting for a person and the oldest wait',
    )
    .option('--deployment <name>', "another deployment than the config's")
    .action(async (options: { deployment?: string }) => {
      const status = await withClient((client, config) =>
        deploymentStatus(client.client, deploymentOption(config, options.deployment)),
      ).catch((error: Error) => {
        throw DeploymentNotFoundError.isInstance(error) ? new CliError(error.message) : error;
      });
      print(status, () => describeBuilds(status));
    });

  deploy
    .command('promote')
    .description('make a build current (new turns start on it; running turns stay on their builds), or ramp it to a share of new turns')
    .argument('<build>', 'the build id (`tollgate deploy status` lists them)')
    .option('--ramp <percent>', 'let the build take this share of new turns (0-100) beside the current one')
    .option('--deployment <name>', "another deployment than the config's")
    .action(async (buildId: string, options: { ramp?: string; deployment?: string }) => {
      const rampPercent = options.ramp === undefined ? undefined : Number(options.ramp);
      if (
        rampPercent !== undefined &&
        !(options.ramp!.trim() !== '' && Number.isFinite(rampPercent) && rampPercent >= 0 && rampPercent <= 100)
      )
        throw new CliError(`--ramp: "${options.ramp}" is not a percentage from 0 to 100`);
      const promotion = await withClient((client, config) =>
        promoteBuild(client.client, { deploymentName: deploymentOption(config, options.deployment), buildId, rampPercent }),
      ).catch((error: Error & { code?: number }) => {
        throw error.code !== undefined ? new CliError(`the server refused: ${error.message}`) : error;
      });
      print(promotion, () =>
        [
          rampPercent === undefined
            ? `Build ${promotion.buildId} of ${promotion.deploymentName} is current${promotion.previous ? ` (was ${promotion.previous}, which keeps its running turns)` : ''}.`
            : `Build ${promotion.buildId} of ${promotion.deploymentName} takes ${rampPercent}% of new turns.`,
          `The same with Temporal's CLI: ${promotion.temporalCommand}`,
        ].join('\n'),
      );
    });
}
