import { z } from 'zod';
import { duration, envName, httpUrl, port } from '../../config/schema-parts';

/** The defaults of `tollgate inbox --web`. */
export const INBOX_DEFAULTS = {
  port: 8234,
  host: '127.0.0.1',
  sessionMs: 8 * 60 * 60 * 1000,
  enrollmentMs: 15 * 60 * 1000,
  pollMs: 1_000,
  maxEventStreams: 100,
  maxEventStreamsPerSession: 4,
} as const;

/** The `inbox` section: the web inbox where people decide (docs/approvals.md, "For the people who decide"). */
export const inboxSchema = z.strictObject({
  port: port.default(INBOX_DEFAULTS.port),
  /** The address it listens on; loopback unless a proxy with TLS stands in front of it. */
  host: z.string().min(1).default(INBOX_DEFAULTS.host),
  /**
   * The address people open, as their browser sees it (scheme, host, port): the passkeys' relying
   * party and the one origin a decision may come from. Default: http://<host>:<port>, named
   * `localhost` on a loopback host (a passkey is bound to a domain name, never to an IP address).
   */
  publicUrl: httpUrl.optional(),
  /** The Temporal Web UI, for the link to each turn; default: the dev server's (temporal.devServer.uiPort). */
  webUiUrl: httpUrl.optional(),
  /** Where the approvers' passkeys are kept (a JSON file, written atomically, mode 0600). */
  passkeysFile: z.string().min(1).default('.tollgate/state/inbox-passkeys.json'),
  /**
   * The environment variable holding the key of the session cookies (32 bytes, base64); without
   * it, a key is made at start, and a restart signs everyone out.
   */
  sessionKeyEnv: envName.optional(),
  /** How long a sign-in lasts. */
  sessionTimeout: duration.default(INBOX_DEFAULTS.sessionMs),
  /** How long an enrollment link (`--enroll <name>`) may be used, once. */
  enrollmentTimeout: duration.default(INBOX_DEFAULTS.enrollmentMs),
  /** How often the list is looked up while someone watches it. */
  pollInterval: duration.default(INBOX_DEFAULTS.pollMs),
  /** At most this many live views (server-sent event streams) at once, over every sign-in; more are refused (429). */
  maxEventStreams: z.number().int().min(1).max(10_000).default(INBOX_DEFAULTS.maxEventStreams),
  /** At most this many live views of one sign-in (its tabs); more are refused (429). */
  maxEventStreamsPerSession: z.number().int().min(1).max(100).default(INBOX_DEFAULTS.maxEventStreamsPerSession),
});

/** The `inbox` section, validated. */
export type InboxConfig = z.output<typeof inboxSchema>;
