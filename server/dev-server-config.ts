import { z } from 'zod';
import { duration, port } from '../config/schema-parts';

/** Options of the embedded Temporal dev server that `npm run server` and the demo start. */
export const devServerSchema = z.strictObject({
  ip: z.string().default('127.0.0.1'),
  uiPort: port.default(8233),
  dbFile: z.string().default('.tollgate/state/temporal.db'),
  logFile: z.string().default('.tollgate/state/dev-server.log'),
  logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('warn'),
  startTimeout: duration.default('30s'),
});
