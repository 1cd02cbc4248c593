import { z } from 'zod';
import { duration, envName, httpUrl, port } from '../config/schema-parts';
import { parseDuration } from '../common/duration';

// The `approvals.notify` section (docs/approvals.md, "Notifications"): the channels people are told
// through, the named groups of approvers, and the routes saying which waits go to which channels.
// Secrets are never written here: each channel names the environment variables that hold them.

/** The defaults and bounds of one channel's sending: a receiver that never answers costs at most `attempts × timeout` plus the pauses. */
export const NOTIFY_DEFAULTS = {
  timeoutMs: 10_000,
  maxTimeoutMs: 30_000,
  attempts: 3,
  maxAttempts: 5,
  /** The pause before the second attempt; it doubles for each further one. */
  firstPauseMs: 500,
  userEnv: 'TOLLGATE_SMTP_USER',
  passwordEnv: 'TOLLGATE_SMTP_PASSWORD',
  webhookSecretEnv: 'TOLLGATE_WEBHOOK_SECRET',
  slackUrlEnv: 'TOLLGATE_SLACK_WEBHOOK_URL',
} as const;

/** A channel's or a group's name: letters, digits, `_`, `-` and `.`, as routes and receipts name it. */
const entryName = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected a name of letters, digits, ".", "_" or "-" (at most 64)');

/** An approver's key name, as `approvals.groups` writes it. */
const approverName = z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'expected an approver key name');

/** A bare e-mail address: nothing that could end a header line or add another recipient. */
const mailAddress = z
  .string()
  .max(254)
  .regex(/^[^\s<>()[\]\\,;:"@]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/, {
    message: 'expected a bare e-mail address such as ops@example.com',
  });

/** The bound of one attempt: longer than 0, at most 30 seconds. */
const attemptTimeout = duration
  .refine((value) => (parseDuration(value) ?? 0) > 0, 'expected a duration longer than 0')
  .refine((value) => (parseDuration(value) ?? Infinity) <= NOTIFY_DEFAULTS.maxTimeoutMs, 'at most 30s per attempt')
  .default(NOTIFY_DEFAULTS.timeoutMs);

/** What every channel has: whether it carries the call's arguments, and the bounds of its sending. */
const channelBase = {
  /** Whether the call's arguments are sent (redacted, escaped and bounded); off by default. */
  arguments: z.boolean().default(false),
  /** How long one attempt may take. */
  timeout: attemptTimeout,
  /** How many attempts, at most, while the receiver fails or does not answer. */
  attempts: z.number().int().min(1).max(NOTIFY_DEFAULTS.maxAttempts).default(NOTIFY_DEFAULTS.attempts),
};

/** A webhook signed by the Standard Webhooks specification. */
export const webhookChannelSchema = z
  .strictObject({
    type: z.literal('webhook'),
    /** Where it is posted; or `urlEnv` when the address itself is a secret. */
    url: httpUrl.optional(),
    urlEnv: envName.optional(),
    /** The environment variable holding the signing secret (`whsec_` and base64, as the specification writes it). */
    secretEnv: envName.default(NOTIFY_DEFAULTS.webhookSecretEnv),
    ...channelBase,
  })
  .refine((channel) => (channel.url === undefined) !== (channel.urlEnv === undefined), {
    message: 'give the webhook either url or urlEnv (one of them)',
  });

/** E-mail over SMTP: a plain-text and an HTML part. */
export const emailChannelSchema = z.strictObject({
  type: z.literal('email'),
  to: z.array(mailAddress).min(1).max(50),
  from: mailAddress,
  smtp: z
    .strictObject({
      host: z.string().regex(/^[A-Za-z0-9.:[\]-]{1,253}$/, 'expected a host name or address'),
      /** Default: 465 with `tls`, 587 otherwise. */
      port: port.optional(),
      /** `tls`: TLS from the first byte; `starttls`: a plain connection that must turn to TLS before anything is sent; `none`: no TLS (a relay on the same machine only). */
      secure: z.enum(['tls', 'starttls', 'none'], { error: 'expected "tls", "starttls" or "none"' }).default('starttls'),
      /** Whether to sign in; the user and password come from the environment, never the config. */
      auth: z.boolean().default(true),
      userEnv: envName.default(NOTIFY_DEFAULTS.userEnv),
      passwordEnv: envName.default(NOTIFY_DEFAULTS.passwordEnv),
      /** A PEM file of the certificate authorities the server's certificate is checked against (default: the system's). */
      caFile: z.string().min(1).optional(),
      /** The name the server's certificate must carry, when it is not `host`. */
      servername: z.string().min(1).max(253).optional(),
    })
    .refine((smtp) => !(smtp.auth && smtp.secure === 'none'), {
      message: 'secure: none with auth would send the password in clear; use tls or starttls, or auth: false',
    }),
  ...channelBase,
});

/** A Slack incoming webhook: a Block Kit message with the inbox link. */
export const slackChannelSchema = z.strictObject({
  type: z.literal('slack'),
  /** The environment variable holding the incoming webhook's URL (the URL is the secret). */
  urlEnv: envName.default(NOTIFY_DEFAULTS.slackUrlEnv),
  ...channelBase,
});

/** One channel: by its `type`. */
export const notifyChannelSchema = z.discriminatedUnion('type', [webhookChannelSchema, emailChannelSchema, slackChannelSchema], {
  error: 'expected a channel with type "webhook", "email" or "slack"',
});

/** Which waits a route matches (by tool, agent or approver group; a list left out matches any), the channels told, and its timers. */
export const notifyRouteSchema = z
  .strictObject({
    /** Tool names, or patterns with `*`. */
    tools: z
      .array(z.string().regex(/^[A-Za-z0-9_*-]{1,128}$/, 'expected a tool name or a pattern of one with *'))
      .min(1)
      .optional(),
    agents: z
      .array(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected an agent name'))
      .min(1)
      .optional(),
    /** Groups of `approvals.notify.groups`: the route matches a wait one of whose deciders is in one of them. */
    groups: z.array(entryName).min(1).optional(),
    channels: z.array(entryName).min(1),
    /** Tell the channels again this long after the last notice, while the wait is open. */
    remindAfter: duration.refine((value) => (parseDuration(value) ?? 0) > 0, 'expected a duration longer than 0').optional(),
    /** After this long, tell `escalateTo` and let it decide too. */
    escalateAfter: duration.refine((value) => (parseDuration(value) ?? 0) > 0, 'expected a duration longer than 0').optional(),
    escalateTo: entryName.optional(),
  })
  .refine((route) => (route.escalateAfter === undefined) === (route.escalateTo === undefined), {
    message: 'escalateAfter and escalateTo go together: when to escalate, and to which group',
  });

/** The `approvals.notify` section. */
export const notifySchema = z
  .strictObject({
    channels: z.record(entryName, notifyChannelSchema).default({}),
    /** Named groups of approvers (key names): what routes' `groups` and `escalateTo` name. */
    groups: z.record(entryName, z.array(approverName)).default({}),
    routes: z.array(notifyRouteSchema).default([]),
  })
  .superRefine((notify, context) => {
    notify.routes.forEach((route, index) => {
      route.channels.forEach((channel, at) => {
        if (!Object.prototype.hasOwnProperty.call(notify.channels, channel))
          context.addIssue({
            code: 'custom',
            path: ['routes', index, 'channels', at],
            message: `no channel "${channel}" in approvals.notify.channels (${Object.keys(notify.channels).join(', ') || 'none'})`,
          });
      });
      for (const [key, names] of [
        ['groups', route.groups ?? []],
        ['escalateTo', route.escalateTo === undefined ? [] : [route.escalateTo]],
      ] as const)
        names.forEach((group, at) => {
          if (!Object.prototype.hasOwnProperty.call(notify.groups, group))
            context.addIssue({
              code: 'custom',
              path: ['routes', index, key, ...(key === 'groups' ? [at] : [])],
              message: `no group "${group}" in approvals.notify.groups (${Object.keys(notify.groups).join(', ') || 'none'})`,
            });
        });
    });
  });

/** The `approvals.notify` section, validated. */
export type NotifyConfig = z.output<typeof notifySchema>;

/** One configured channel, validated. */
export type NotifyChannelConfig = z.output<typeof notifyChannelSchema>;

/** A configured webhook channel. */
export type WebhookChannelConfig = z.output<typeof webhookChannelSchema>;

/** A configured e-mail channel. */
export type EmailChannelConfig = z.output<typeof emailChannelSchema>;

/** A configured Slack channel. */
export type SlackChannelConfig = z.output<typeof slackChannelSchema>;
