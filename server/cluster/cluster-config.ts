import { stringify } from 'yaml';

/** The pinned Temporal server that `npm run cluster` builds from Temporal's own Go module. */
export const CLUSTER_SERVER_VERSION = '1.32.2';
/** The Go toolchain it needs (the module asks for Go 1.26.10 or newer; the proxy serves this one). */
export const CLUSTER_GO_TOOLCHAIN = 'go1.27.3';

/** One process of the cluster: a service and its ports. */
export interface ClusterProcess {
  /** `frontend`, `matching`, `worker`, `history-1`, `history-2`. */
  name: string;
  service: 'frontend' | 'matching' | 'history' | 'worker';
  grpcPort: number;
  membershipPort: number;
  httpPort?: number;
  metricsPort: number;
}

/** What the config files of a cluster are made from. */
export interface ClusterLayout {
  processes: ClusterProcess[];
  historyShards: number;
  postgres: { host: string; port: number; user: string; password: string; database: string; visibilityDatabase: string };
  tls: { certFile: string; keyFile: string; caFile: string; serverName: string };
  dynamicConfigFile: string;
}

/**
 * The server config one process starts with (YAML): the shared persistence on PostgreSQL, the
 * frontend's TLS (its own clients inside the cluster trust the same CA), and the ports of this
 * process's own service. Every process of the cluster finds the others through the membership
 * table in PostgreSQL.
 */
export function processConfig(layout: ClusterLayout, own: ClusterProcess): string {
  const frontend = layout.processes.find((process) => process.service === 'frontend')!;
  const sql = (databaseName: string) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${layout.postgres.host}:${layout.postgres.port}`,
      connectProtocol: 'tcp',
      user: layout.postgres.user,
      password: layout.postgres.password,
      maxConns: 20,
      maxIdleConns: 20,
      maxConnLifetime: '1h',
    },
  });
  const config = {
    log: { stdout: true, level: 'warn', format: 'json' },
    persistence: {
      numHistoryShards: layout.historyShards,
      defaultStore: 'default',
      visibilityStore: 'visibility',
      datastores: { default: sql(layout.postgres.database), visibility: sql(layout.postgres.visibilityDatabase) },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      tls: {
        frontend: {
          server: { certFile: layout.tls.certFile, keyFile: layout.tls.keyFile, requireClientAuth: false },
          client: { serverName: layout.tls.serverName, rootCaFiles: [layout.tls.caFile] },
        },
        // The system workers reach the frontend as any client does.
        systemWorker: { certFile: '', keyFile: '', client: { serverName: layout.tls.serverName, rootCaFiles: [layout.tls.caFile] } },
      },
      metrics: { prometheus: { timerType: 'histogram', listenAddress: `127.0.0.1:${own.metricsPort}` } },
    },
    // Every service is named (the membership monitor tracks each), with this process's own ports for its own.
    services: Object.fromEntries(
      (['frontend', 'history', 'matching', 'worker'] as const).map((service) => {
        const ports = own.service === service ? own : layout.processes.find((process) => process.service === service)!;
        const rpc = {
          grpcPort: ports.grpcPort,
          membershipPort: ports.membershipPort,
          bindOnIP: '127.0.0.1',
          ...(ports.httpPort ? { httpPort: ports.httpPort } : {}),
        };
        return [service, { rpc }];
      }),
    ),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${frontend.grpcPort}`,
          httpAddress: `127.0.0.1:${frontend.httpPort}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    dynamicConfigClient: { filepath: layout.dynamicConfigFile, pollInterval: '10s' },
  };
  return stringify(config);
}

/** The dynamic config every process reads: worker versioning and updates on, as Tollgate's workers and turns use them. */
export function dynamicConfig(): string {
  const on = [{ value: true, constraints: {} }];
  return stringify(
    {
      'system.enableDeploymentVersions': on,
      'frontend.workerVersioningWorkflowAPIs': on,
      'frontend.workerVersioningDataAPIs': on,
      'frontend.workerVersioningRuleAPIs': on,
      'frontend.enableUpdateWorkflowExecution': on,
      'frontend.enableUpdateWorkflowExecutionAsyncAccepted': on,
      'system.forceSearchAttributesCacheRefreshOnRead': on,
    },
    { aliasDuplicateObjects: false },
  );
}
