import { z } from 'zod';
import { DEFAULT_TASK_QUEUE } from '../common/defaults';

/**
 * Where the Temporal server is and which names the turns use on it: the keys of config `temporal`
 * the connection reads. The section's other keys (`devServer`, `deployment`, `worker`) belong to
 * the dev server and the worker, above this folder; the config's schema puts them beside these.
 */
export const temporalSchema = z.strictObject({
  address: z
    .string()
    .regex(/^[^\s:]+:\d+$/, 'expected host:port')
    .default('127.0.0.1:7233'),
  namespace: z.string().min(1).default('default'),
  taskQueue: z.string().min(1).default(DEFAULT_TASK_QUEUE),
});
