// The commands that run the parts: a worker, the codec server, the embedded dev server, and the Temporal binaries' setup.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { codecFromEnvironment } from '../../codec/aes-gcm-codec';
import { codecTokenFromEnvironment, startCodecServer } from '../../codec/codec-server';
import type { TollgateConfig } from '../../config/config-schema';
import { loadConfig, PACKAGE_ROOT } from '../../config/load-config';
import { probeServer } from '../../connection/temporal-connection';
import { enclosingProject } from '../../server/temporal-binaries';
import { CliError, json, print } from './context';

/** Where `server start` records the pid of the dev server it started: beside the server's database. */
function pidFile(config: TollgateConfig): string {
  return path.join(path.dirname(config.temporal.devServer.dbFile), 'dev-server.pid');
}

/** The recorded pid while its process lives; a file naming a process that is gone is removed. */
function recordedPid(config: TollgateConfig): number | undefined {
  const file = pidFile(config);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    rmSync(file, { force: true });
    return undefined;
  }
}

// The worker and the dev server's modules take seconds to load and only their own commands need them
// (`tollgate --help`, `status` or `approve` load neither): they are required when the command runs.
function workerCode(): typeof import('../../worker/run-worker') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../../worker/run-worker');
}

function devServerCode(): typeof import('../../server/dev-server') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../../server/dev-server');
}

/** `worker`, `codec-server`, `server start|stop|status` and `setup`, in that order. */
export function registerServiceCommands(program: Command): void {
  program
    .command('worker')
    .description('run a worker on the configured task queue until Ctrl-C')
    .action(async () => {
      await workerCode().runWorker(loadConfig());
    });

  program
    .command('codec-server')
    .description('serve /encode and /decode for the Web UI and CLI, with the keyring of encryption.keysEnv, until Ctrl-C')
    .option('--port <port>', 'the port (default: encryption.codecServer.port)')
    .action(async (options) => {
      const config = loadConfig();
      const codec = codecFromEnvironment(config.encryption.keysEnv);
      if (!codec) throw new CliError('encryption.keysEnv is not set in the config: there is nothing to decode');
      const { host, hosts, origins, tokenEnv } = config.encryption.codecServer;
      let token: string;
      try {
        token = codecTokenFromEnvironment(tokenEnv);
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      const port = Number(options.port ?? config.encryption.codecServer.port);
      const codecServer = await startCodecServer({ codec, token, port, host, origins, hosts });
      console.log(`Codec server at ${codecServer.url} for ${origins.join(', ')}; callers send "Authorization: Bearer $${tokenEnv}".`);
      console.log('Ctrl-C stops it.');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await codecServer.close();
    });

  const server = program.command('server').description('the embedded Temporal dev server (Web UI included)');

  server
    .command('start')
    .description('start it in the background (or use the one already answering)')
    .action(async () => {
      const config = loadConfig();
      const lease = await devServerCode().ensureServer(config);
      if (!lease.started) {
        print({ address: lease.address, started: false }, () => `A Temporal server already answers at ${lease.address}; nothing started.`);
        return;
      }
      writeFileSync(pidFile(config), `${lease.started.process.pid}\n`);
      lease.started.process.unref();
      print(
        { address: lease.address, uiUrl: lease.uiUrl, pid: lease.started.process.pid, started: true },
        () => `Started the Temporal dev server at ${lease.address} (pid ${lease.started!.process.pid}); Web UI ${lease.uiUrl}`,
      );
    });

  server
    .command('stop')
    .description('stop the dev server that `tollgate server start` started')
    .action(async () => {
      const config = loadConfig();
      const pid = recordedPid(config);
      if (pid === undefined) throw new CliError(`no dev server started by tollgate is running (no live pid in ${pidFile(config)})`);
      process.kill(pid, 'SIGTERM');
      for (let waited = 0; waited < 15_000; waited += 100) {
        if (recordedPid(config) === undefined) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      if (recordedPid(config) !== undefined) process.kill(pid, 'SIGKILL');
      rmSync(pidFile(config), { force: true });
      print({ stopped: pid }, () => `Stopped the Temporal dev server (pid ${pid}).`);
    });

  server
    .command('status')
    .description('whether a Temporal server answers at the configured address')
    .action(async () => {
      const config = loadConfig();
      const probe = await probeServer(config.temporal.address, config.temporalProfile);
      const pid = recordedPid(config);
      print({ address: config.temporal.address, answers: probe === 'temporal', pid }, () =>
        probe === 'temporal'
          ? `A Temporal server answers at ${config.temporal.address}${pid ? ` (dev server pid ${pid})` : ''}.`
          : `No Temporal server answers at ${config.temporal.address}.`,
      );
      if (probe !== 'temporal') process.exitCode = 1;
    });

  program
    .command('setup')
    .description("install the pinned Temporal binaries (dev server, time-skipping test server) into this project's .tollgate/bin")
    .action(() => {
      const project = enclosingProject();
      const folder = path.join(project, '.tollgate', 'bin');
      const args = [
        path.join(PACKAGE_ROOT, 'scripts', 'setup.mjs'),
        '--binaries-only',
        '--project',
        project,
        ...(json() ? ['--quiet'] : []),
      ];
      const setup = spawnSync(process.execPath, args, { stdio: ['ignore', json() ? 'ignore' : 'inherit', 'inherit'] });
      if (setup.status !== 0) throw new CliError('setup failed; see the lines above');
      print({ folder }, () => `The Temporal binaries are in ${path.relative(process.cwd(), folder) || folder}.`);
    });
}
