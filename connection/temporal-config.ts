import { z } from 'zod';
import { DEFAULT_TASK_QUEUE } from '../common/defaults';
import { devServerSchema } from '../server/dev-server-config';
import { deploymentSchema } from '../worker/deployment-config';
import { workerCacheSchema } from '../worker/cache-config';

/** Where the Temporal server is and which names the turns use on it (config `temporal`). */
export const temporalSchema = z.strictObject({
  address: z
    .string()
    .regex(/^[^\s:]+:\d+$/, 'expected host:port')
    .default('127.0.0.1:7233'),
  namespace: z.string().min(1).default('default'),
  taskQueue: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  devServer: devServerSchema.prefault({}),
  deployment: deploymentSchema.prefault({}),
  worker: workerCacheSchema.prefault({}),
});
