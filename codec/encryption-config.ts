import { z } from 'zod';
import { envName } from '../config/schema-parts';

/** The `encryption` section: the keyring that encrypts payloads, what must arrive encrypted, and the codec server. */
export const encryptionSchema = z.strictObject({
  /** The environment variable holding the keyring, `keyId:base64key` entries separated by commas (the first encrypts). No encryption when unset. */
  keysEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable')
    .optional(),
  /**
   * Payloads a worker refuses when they arrive unencrypted: `decisions` (the `approval` signal and
   * the `decide` update, recorded as rejected) or `all` (also turn and conversation inputs and `send`).
   */
  requireEncrypted: z.enum(['decisions', 'all']).default('decisions'),
  codecServer: z
    .strictObject({
      port: z.number().int().min(1).max(65535).default(8888),
      /** The address it listens on. */
      host: z.string().min(1).default('127.0.0.1'),
      /** The environment variable holding the bearer token every caller must send; the server refuses to start without it. */
      tokenEnv: envName.default('TOLLGATE_CODEC_TOKEN'),
      /** Web UI origins allowed to call it. */
      origins: z
        .array(z.string().regex(/^https?:\/\/[^/\s]+$/, 'expected an origin like http://127.0.0.1:8233'))
        .default(['http://127.0.0.1:8233', 'http://localhost:8233']),
      /** `Host` header values it answers (host:port); by default the loopback names with its port. */
      hosts: z.array(z.string().regex(/^[^\s/]+:\d+$/, 'expected host:port')).optional(),
    })
    .prefault({}),
});
