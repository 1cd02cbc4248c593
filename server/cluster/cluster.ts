import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import Long from 'long';
import { ensureSearchAttributes } from '../../connection/temporal-connection';
import { ServerError } from '../../connection/ports';
import { PROJECT_ROOT } from '../../config/load-config';
import type { TollgateConfig } from '../../config/config-schema';
import { BINARY_FOLDER } from '../temporal-binaries';
import {
  CLUSTER_GO_TOOLCHAIN,
  CLUSTER_SERVER_VERSION,
  dynamicConfig,
  processConfig,
  type ClusterLayout,
  type ClusterProcess,
} from './cluster-config';

/**
 * A Temporal cluster the project runs itself: the server built from Temporal's own Go module, its
 * state in PostgreSQL, each service its own process (frontend, matching, worker and two history
 * hosts), TLS on the frontend with certificates made for the run.
 */

/** Where the built server and its SQL schema tool live (once built, kept). */
export const CLUSTER_BIN = path.join(BINARY_FOLDER, `temporal-server-${CLUSTER_SERVER_VERSION}`);
/** Where a cluster's config files, certificates and logs go. */
export const CLUSTER_FOLDER = path.join(PROJECT_ROOT, '.tollgate', 'cluster');

/** The ports of the cluster's processes (loopback); the frontend's is the address clients use. */
export const CLUSTER_PROCESSES: ClusterProcess[] = [
  { name: 'frontend', service: 'frontend', grpcPort: 17233, membershipPort: 16933, httpPort: 17243, metricsPort: 19090 },
  { name: 'history-1', service: 'history', grpcPort: 17234, membershipPort: 16934, metricsPort: 19091 },
  { name: 'history-2', service: 'history', grpcPort: 17244, membershipPort: 16944, metricsPort: 19092 },
  { name: 'matching', service: 'matching', grpcPort: 17235, membershipPort: 16935, metricsPort: 19093 },
  { name: 'worker', service: 'worker', grpcPort: 17239, membershipPort: 16939, metricsPort: 19094 },
];

const POSTGRES = {
  host: '127.0.0.1',
  user: 'temporal',
  password: 'temporal',
  database: 'temporal',
  visibilityDatabase: 'temporal_visibility',
};

function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; what: string; cwd?: string }): string {
  const done = spawnSync(command, args, {
    encoding: 'utf8',
    env: options.env ?? process.env,
    cwd: options.cwd,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (done.error) throw new ServerError(`${options.what}: could not run ${command}: ${done.error.message}`);
  if (done.status !== 0) {
    const said = `${done.stderr ?? ''}${done.stdout ?? ''}`.trim().split('\n').slice(-5).join(' | ');
    throw new ServerError(`${options.what} failed (exit ${done.status}): ${said}`);
  }
  return done.stdout;
}

/** The `go` command: on the PATH, else where Go's own installer puts it; an error naming both when neither is there. */
function goCommand(): string {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0) return 'go';
  const installed = '/usr/local/go/bin/go';
  if (existsSync(installed)) return installed;
  throw new ServerError(
    `cluster: building the server needs Go (any version; it fetches ${CLUSTER_GO_TOOLCHAIN}): no go on the PATH nor at ${installed}`,
  );
}

/**
 * The server and its SQL tool, built once into the project's tool folder with `go install` from
 * the pinned module (the Go module proxy serves both the module and the toolchain it needs).
 */
export function ensureClusterBinaries(log: (line: string) => void = console.log): { server: string; sqlTool: string; schemaDir: string } {
  const server = path.join(CLUSTER_BIN, 'server');
  const sqlTool = path.join(CLUSTER_BIN, 'sql');
  const env = { ...process.env, GOTOOLCHAIN: CLUSTER_GO_TOOLCHAIN, GOBIN: CLUSTER_BIN, GOFLAGS: '-mod=mod' };
  const go = goCommand();
  if (!existsSync(server) || !existsSync(sqlTool)) {
    log(
      `cluster: building Temporal server ${CLUSTER_SERVER_VERSION} from go.temporal.io/server with ${CLUSTER_GO_TOOLCHAIN} (minutes, once)`,
    );
    mkdirSync(CLUSTER_BIN, { recursive: true });
    run(
      go,
      [
        'install',
        `go.temporal.io/server/cmd/server@v${CLUSTER_SERVER_VERSION}`,
        `go.temporal.io/server/cmd/tools/sql@v${CLUSTER_SERVER_VERSION}`,
      ],
      { env, what: 'go install of the Temporal server' },
    );
  }
  const modules = run(go, ['env', 'GOMODCACHE'], { env, what: 'go env GOMODCACHE' }).trim();
  const schemaDir = path.join(modules, `go.temporal.io/server@v${CLUSTER_SERVER_VERSION}`, 'schema', 'postgresql', 'v12');
  if (!existsSync(schemaDir))
    throw new ServerError(
      `cluster: the schema files are not at ${schemaDir}; run go mod download go.temporal.io/server@v${CLUSTER_SERVER_VERSION}`,
    );
  return { server, sqlTool, schemaDir };
}

/** The local PostgreSQL's port (the cluster `node scripts/setup.mjs --system` started). */
function postgresPort(): number {
  const listed = run('pg_lsclusters', ['--no-header'], { what: 'pg_lsclusters' }).trim().split('\n')[0]?.split(/\s+/) ?? [];
  if (listed[3] !== 'online') throw new ServerError('cluster: PostgreSQL is not running; run node scripts/setup.mjs --system first');
  return Number(listed[2]);
}

/** The `temporal` role, its two databases, and their schema at the module's version, made with Temporal's own SQL tool. */
export function provisionClusterDatabase({ sqlTool, schemaDir }: { sqlTool: string; schemaDir: string }): number {
  const port = postgresPort();
  const psql = (sql: string) =>
    run('runuser', ['-u', 'postgres', '--', 'psql', '-p', String(port), '-tAc', sql], { what: `psql ${sql}` }).trim();
  if (psql(`SELECT 1 FROM pg_roles WHERE rolname = '${POSTGRES.user}'`) !== '1')
    psql(`CREATE ROLE ${POSTGRES.user} LOGIN CREATEDB PASSWORD '${POSTGRES.password}'`);
  const tool = (database: string, ...args: string[]) =>
    run(
      sqlTool,
      [
        '--plugin',
        'postgres12',
        '--ep',
        POSTGRES.host,
        '--port',
        String(port),
        '--user',
        POSTGRES.user,
        '--password',
        POSTGRES.password,
        '--db',
        database,
        ...args,
      ],
      { what: `temporal-sql-tool ${args[0]} on ${database}` },
    );
  for (const [database, folder] of [
    [POSTGRES.database, 'temporal'],
    [POSTGRES.visibilityDatabase, 'visibility'],
  ] as const) {
    if (psql(`SELECT 1 FROM pg_database WHERE datname = '${database}'`) !== '1') {
      tool(database, 'create-database');
      tool(database, 'setup-schema', '-v', '0.0');
    }
    tool(database, 'update-schema', '-d', path.join(schemaDir, folder, 'versioned'));
  }
  return port;
}

/** A CA and a server certificate for 127.0.0.1 and localhost, made with openssl for this cluster (kept between runs). */
export function clusterCertificates(folder: string): ClusterLayout['tls'] {
  mkdirSync(folder, { recursive: true });
  const file = (name: string) => path.join(folder, name);
  const tls = { caFile: file('ca.pem'), certFile: file('server.pem'), keyFile: file('server-key.pem'), serverName: 'localhost' };
  if (existsSync(tls.caFile) && existsSync(tls.certFile) && existsSync(tls.keyFile)) return tls;
  const openssl = (...args: string[]) => run('openssl', args, { what: `openssl ${args[0]}`, cwd: folder });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca-key.pem',
    '-out',
    'ca.pem',
    '-days',
    '30',
    '-subj',
    '/CN=Tollgate cluster CA',
  );
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server-key.pem', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca-key.pem',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '30',
    '-extfile',
    'server.ext',
  );
  return tls;
}

/** The last error a process logged (its `msg` and `error`, cut short), or its last line. */
function lastError(logFile: string): string {
  const lines = readFileSync(logFile, 'utf8').trim().split('\n');
  for (const line of lines.reverse()) {
    try {
      const entry = JSON.parse(line) as { level?: string; msg?: string; error?: string };
      if (entry.level === 'error' || entry.level === 'fatal') return `${entry.msg}: ${String(entry.error ?? '').slice(-300)}`;
    } catch {
      if (line.trim()) return line.slice(0, 300);
    }
  }
  return '(nothing logged)';
}

/** A running cluster: its frontend's address, what a client needs to trust it, and its processes by name. */
export interface Cluster {
  address: string;
  namespace: string;
  tls: ClusterLayout['tls'];
  processes: Map<string, ChildProcess>;
  folder: string;
  /** Starts one process again (after a kill). */
  restart(name: string): Promise<void>;
  /** Stops every process it started and waits until they have exited. */
  stop(): Promise<void>;
}

function waitForExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });
}

/** The TLS options of a connection to the cluster's frontend: its CA and the name its certificate carries. */
export function clusterTls(cluster: Pick<Cluster, 'tls'>): { serverNameOverride: string; serverRootCACertificate: Buffer } {
  return { serverNameOverride: cluster.tls.serverName, serverRootCACertificate: readFileSync(cluster.tls.caFile) };
}

/** A client connection to the cluster's frontend over TLS. */
export function clusterConnection(cluster: Pick<Cluster, 'address' | 'tls'>): Promise<Connection> {
  return Connection.connect({ address: cluster.address, tls: clusterTls(cluster), connectTimeout: '5s' });
}

/**
 * Builds (once) and starts the cluster, registers the `default` namespace and Tollgate's search
 * attributes, and resolves once the frontend answers over TLS. Stops what it started when any step fails.
 */
export async function startCluster({
  folder = CLUSTER_FOLDER,
  historyShards = 8,
  log = console.log,
  startTimeoutMs = 120_000,
}: { folder?: string; historyShards?: number; log?: (line: string) => void; startTimeoutMs?: number } = {}): Promise<Cluster> {
  const binaries = ensureClusterBinaries(log);
  const port = provisionClusterDatabase(binaries);
  const tls = clusterCertificates(path.join(folder, 'tls'));
  const dynamicConfigFile = path.join(folder, 'dynamicconfig.yaml');
  writeFileSync(dynamicConfigFile, dynamicConfig());
  const layout: ClusterLayout = { processes: CLUSTER_PROCESSES, historyShards, postgres: { ...POSTGRES, port }, tls, dynamicConfigFile };
  const processes = new Map<string, ChildProcess>();
  const startProcess = (own: ClusterProcess) => {
    const configFile = path.join(folder, `${own.name}.yaml`);
    writeFileSync(configFile, processConfig(layout, own));
    const logFile = openSync(path.join(folder, `${own.name}.log`), 'a');
    const child = spawn(binaries.server, ['--config-file', configFile, '--allow-no-auth', 'start', '--service', own.service], {
      stdio: ['ignore', logFile, logFile],
      cwd: folder,
    });
    closeSync(logFile);
    processes.set(own.name, child);
    return child;
  };
  const stop = async () => {
    for (const child of processes.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.all([...processes.values()].map(waitForExit));
  };
  const address = `127.0.0.1:${CLUSTER_PROCESSES.find((own) => own.service === 'frontend')!.grpcPort}`;
  try {
    for (const own of CLUSTER_PROCESSES) startProcess(own);
    const deadline = Date.now() + startTimeoutMs;
    let connection: Connection | undefined;
    for (;;) {
      const exited = [...processes].find(([, child]) => child.exitCode !== null);
      if (exited) {
        const said = lastError(path.join(folder, `${exited[0]}.log`));
        throw new ServerError(`cluster: the ${exited[0]} process exited (code ${exited[1].exitCode}): ${said}`);
      }
      try {
        connection = await clusterConnection({ address, tls });
        await connection.workflowService.getSystemInfo({});
        break;
      } catch (error) {
        await connection?.close().catch(() => undefined);
        if (Date.now() > deadline)
          throw new ServerError(
            `cluster: the frontend did not answer at ${address} within ${startTimeoutMs} ms: ${(error as Error).message}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
    try {
      await registerDefaultNamespace(connection, deadline);
      // A namespace just registered reaches every service's cache within seconds: until then it is "not found".
      for (;;) {
        try {
          await ensureSearchAttributes(connection, 'default');
          break;
        } catch (error) {
          if (!/not found/i.test(String((error as Error).message)) || Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      }
    } finally {
      await connection.close();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    address,
    namespace: 'default',
    tls,
    processes,
    folder,
    async restart(name) {
      const own = CLUSTER_PROCESSES.find((entry) => entry.name === name);
      if (!own) throw new Error(`no cluster process named ${name}`);
      const before = processes.get(name);
      if (before) await waitForExit(before);
      startProcess(own);
    },
    stop,
  };
}

/**
 * The history shards each history host holds now, from its own metrics (`numshards_gauge`);
 * a host that does not answer holds none.
 */
export async function historyShards(): Promise<Record<string, number>> {
  const held: Record<string, number> = {};
  for (const own of CLUSTER_PROCESSES.filter((entry) => entry.service === 'history')) {
    try {
      const text = await (await fetch(`http://127.0.0.1:${own.metricsPort}/metrics`, { signal: AbortSignal.timeout(2_000) })).text();
      const line = text.split('\n').find((entry) => entry.startsWith('numshards_gauge'));
      held[own.name] = line ? Number(line.trim().split(/\s+/).pop()) : 0;
    } catch {
      held[own.name] = 0;
    }
  }
  return held;
}

/** Registers `default` (a cluster does not have it until someone does); the worker service may still be starting, so it is tried until the deadline. */
async function registerDefaultNamespace(connection: Connection, deadline: number): Promise<void> {
  for (;;) {
    try {
      await connection.workflowService.describeNamespace({ namespace: 'default' });
      return;
    } catch {
      // Not there yet: register it.
    }
    try {
      await connection.workflowService.registerNamespace({
        namespace: 'default',
        workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(3 * 24 * 3600) },
      });
      return;
    } catch (error) {
      if (/already exists/i.test(String((error as Error).message))) return;
      if (Date.now() > deadline) throw new ServerError(`cluster: could not register the default namespace: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

/** The config of a worker or client of this cluster: its frontend's address, and the CA and server name to trust. */
export function clusterClientConfig(base: TollgateConfig, cluster: Pick<Cluster, 'address' | 'tls' | 'namespace'>): TollgateConfig {
  return {
    ...base,
    temporal: {
      ...base.temporal,
      address: cluster.address,
      namespace: cluster.namespace,
      // The first worker of a deployment makes its build current on a cluster too: nobody else would.
      deployment: { ...base.temporal.deployment, makeCurrent: 'on-start' },
    },
    temporalProfile: { ...base.temporalProfile, tls: { serverName: cluster.tls.serverName, serverCACert: { path: cluster.tls.caFile } } },
  };
}
