import { Connection } from '@temporalio/client';
import { toClientOptions, type ClientConfigProfile } from '@temporalio/envconfig';
import { temporal } from '@temporalio/proto';
import type { NativeConnection, NativeConnectionOptions } from '@temporalio/worker';
import { REQUIRED_SEARCH_ATTRIBUTES } from '../common/search-attributes';
import type { TollgateConfig } from '../config/config-schema';
import { parseAddress, portAnswers } from './ports';

/**
 * The options Temporal's Connection and NativeConnection both take: the config's address (after
 * `TEMPORAL_ADDRESS`), with TLS, mTLS, API key and gRPC metadata from the Temporal profile
 * (`TEMPORAL_PROFILE`, `temporal.toml`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`).
 */
export function connectionOptions(address: string, profile: ClientConfigProfile = {}): NativeConnectionOptions {
  return toClientOptions({ ...profile, address }).connectionOptions;
}

/** What listens at an address: a Temporal server, another program, or nothing. */
export async function probeServer(address: string, profile?: ClientConfigProfile): Promise<'temporal' | 'other' | 'none'> {
  const { host, port } = parseAddress(address);
  if (!(await portAnswers(host, port))) return 'none';
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ ...connectionOptions(address, profile), connectTimeout: '3s' });
    await connection.workflowService.getSystemInfo({});
    return 'temporal';
  } catch {
    return 'other';
  } finally {
    await connection?.close();
  }
}

const GRPC_UNIMPLEMENTED = 12;

/** Registers Tollgate's search attributes on a namespace where they are missing. */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const { IndexedValueType } = temporal.api.enums.v1;
  const wanted = {
    Keyword: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    Bool: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
    KeywordList: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
  };
  let existing: Record<string, unknown> = {};
  try {
    existing = (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  } catch (error) {
    // The time-skipping test server can add search attributes but not list them.
    if ((error as { code?: number }).code !== GRPC_UNIMPLEMENTED) throw error;
  }
  const missing = REQUIRED_SEARCH_ATTRIBUTES.filter(({ key }) => !(key.name in existing));
  if (missing.length === 0) return;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map(({ key, cliType }) => [key.name, wanted[cliType]])),
  });
}

/** A client connection to the configured server; the caller closes it. */
export function connectClient(config: Pick<TollgateConfig, 'temporal' | 'temporalProfile'>): Promise<Connection> {
  return Connection.connect(connectionOptions(config.temporal.address, config.temporalProfile));
}

/**
 * A worker connection to the configured server, after registering Tollgate's search attributes
 * there (turns cannot start without them); the caller closes it.
 */
export async function connectWorker(config: Pick<TollgateConfig, 'temporal' | 'temporalProfile'>): Promise<NativeConnection> {
  const admin = await connectClient(config);
  try {
    await ensureSearchAttributes(admin, config.temporal.namespace);
  } finally {
    await admin.close();
  }
  // The worker package (its native core and its dependencies) is loaded by workers only, not by every client and CLI command.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const worker = require('@temporalio/worker') as typeof import('@temporalio/worker');
  return worker.NativeConnection.connect(connectionOptions(config.temporal.address, config.temporalProfile));
}
