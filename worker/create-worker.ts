import path from 'node:path';
import { Connection, type DataConverter } from '@temporalio/client';
import { codecFromEnvironment } from '../codec/aes-gcm-codec';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { ToolDefinition } from '../activities/define-tool';
import type { TollgateConfig } from '../config/config-schema';
import { ensureSearchAttributes } from '../server/dev-server';

/** The file webpack bundles the workflows from. */
export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', 'index.ts');

/** Options of a Tollgate worker; anything in `workerOptions` goes to Temporal's Worker as it is. */
export interface CreateWorkerOptions {
  config: TollgateConfig;
  /** When left out, the worker connects to `config.temporal.address` (registering the search attributes) and closes that connection when it stops. */
  connection?: NativeConnection;
  /** Replaces the built-in tools. */
  tools?: ToolDefinition[];
  /** Replaces the activities built from config and tools (tests wrap them to observe calls). */
  activities?: ReturnType<typeof createActivities>;
  /** A prebuilt bundle from `bundleWorkflowCode`; the workflows are bundled from source otherwise. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  workerOptions?: Partial<WorkerOptions>;
}

/** Builds the tool registry (stopping here on a bad declaration), bundles the workflows and creates the Worker. */
export async function createWorker({ config, connection: given, tools, activities, workflowBundle, workerOptions }: CreateWorkerOptions): Promise<Worker> {
  const connection = given ?? (await connectToServer(config));
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...(workflowBundle ? { workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: activities ?? createActivities({ config, tools }),
    dataConverter: dataConverterFor(config),
    // Heartbeats carry a streaming model step's text to live views; send them at least every second.
    maxHeartbeatThrottleInterval: '1 second',
    ...workerOptions,
  });
  if (!given) {
    const run = worker.run.bind(worker);
    worker.run = async () => {
      try {
        await run();
      } finally {
        await connection.close();
      }
    };
  }
  return worker;
}

/** Encrypts every payload when the config names a keyring (`encryption.keysEnv`); plain JSON otherwise. */
export function dataConverterFor(config: TollgateConfig): DataConverter | undefined {
  const codec = codecFromEnvironment(config.encryption.keysEnv);
  return codec ? { payloadCodecs: [codec] } : undefined;
}

async function connectToServer(config: TollgateConfig): Promise<NativeConnection> {
  const { address, namespace } = config.temporal;
  const admin = await Connection.connect({ address });
  try {
    await ensureSearchAttributes(admin, namespace);
  } finally {
    await admin.close();
  }
  return NativeConnection.connect({ address });
}
