import { z } from 'zod';
import { DEFAULT_APPROVED_SCHEDULE_TO_START_MS, DEFAULT_TURN_LIMITS, OUTCOME_DEFAULTS } from '../common/defaults';
import { duration, envName, positiveDuration } from '../config/schema-parts';
import { approvalRulesSchema } from '../policies/approval-rules';
import { notifySchema } from '../notify/notify-config';

// The sections a worker reads into each turn's settings (turn-settings.ts).

/** The `limits` section: a turn's bounds on steps, tool calls, failures, time, history and tokens. */
export const limitsSchema = z.strictObject({
  maxSteps: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxSteps),
  maxToolCalls: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxToolCalls),
  errorBudget: z.number().int().min(0).default(DEFAULT_TURN_LIMITS.errorBudget),
  deadline: duration.default(DEFAULT_TURN_LIMITS.deadlineMs),
  maxHistoryEvents: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxHistoryEvents),
  maxHistoryBytes: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxHistoryBytes),
  /** How deep subagents may nest below a root turn (0: no delegation). */
  maxDepth: z.number().int().min(0).default(DEFAULT_TURN_LIMITS.maxDepth),
  /** Child turns of one turn running at once. */
  maxConcurrentSubagents: z.number().int().min(1).default(DEFAULT_TURN_LIMITS.maxConcurrentSubagents),
  /** Handoffs one turn may make. */
  maxHandoffs: z.number().int().min(0).default(DEFAULT_TURN_LIMITS.maxHandoffs),
  /** A turn's token budget, input and output tokens together; none when unset. */
  maxTokens: z.number().int().min(1).optional(),
  /** A conversation's token budget across all its turns and runs; none when unset. */
  maxConversationTokens: z.number().int().min(1).optional(),
});

/** The `approvals` section: what a decision on a call must carry (a digest, a signature) and how long an approved call may wait. */
export const approvalsSchema = z.strictObject({
  /**
   * Whether a decision must name the digest of the arguments it approves (the `approval` signal's
   * and the `decide` update's `argsDigest`); one without it is rejected and recorded.
   */
  requireDigest: z.boolean().default(true),
  /**
   * On a worker: the environment variable holding the approvers' public keys, `name:base64` entries
   * (raw 32-byte Ed25519 keys) separated by commas. When set, every decision must be signed by one
   * of them (docs/approvals.md); off when unset.
   */
  publicKeysEnv: envName.optional(),
  /**
   * On a client: the environment variable holding the operator's signing key, one `name:base64`
   * entry (the raw 32-byte Ed25519 private key).
   */
  privateKeyEnv: envName.optional(),
  /** How old a signed decision's `signedAt` may be when the turn takes it, by the turn's clock. */
  signatureMaxAge: duration.default('10 minutes'),
  /**
   * Where the stand-ins' statements are kept (`tollgate stand-in add`): who may decide in an
   * approver's place, for a period, each statement signed by that approver's key. Read by the worker
   * at each turn's start; taken only with approver keys.
   */
  standInsFile: z.string().min(1).default('.tollgate/state/stand-ins.json'),
  /** How long an approved irreversible call may wait for a worker to start it; after that it ends as `not_run`. */
  scheduleToStart: positiveDuration.default(DEFAULT_APPROVED_SCHEDULE_TO_START_MS),
  /**
   * Who may decide on a tool's calls: a tool name, or a pattern with `*` (`files__*`), and the
   * approvers (key names) who may approve, deny or resolve its calls. Each turn enforces the groups
   * it started with; a tool no entry names may be decided by any approver.
   */
  groups: z
    .record(
      z.string().regex(/^[A-Za-z0-9_*-]{1,128}$/, 'expected a tool name or a pattern of one with *'),
      z.array(z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'expected an approver key name')),
    )
    .default({}),
  /**
   * Rules that decide routine irreversible calls (docs/approvals.md): an ordered list, first match
   * wins, each a tool (or pattern), a JSON Schema condition on the arguments and `approve` (within
   * its limits), `deny` (with the reason the model gets) or `ask`. Nothing matching: a person is asked.
   */
  rules: approvalRulesSchema.default([]),
  /**
   * Who is told when a call waits for a person (docs/approvals.md, "Notifications"): the channels
   * (signed webhook, e-mail, Slack; secrets from the environment), named groups of approvers, and
   * the routes matching waits to channels, with their reminders and escalation.
   */
  notify: notifySchema.prefault({}),
});

/** The `outcomes` section: what a write whose outcome is unknown does. */
export const outcomesSchema = z.strictObject({
  /**
   * What a write whose outcome is unknown does: `ask` waits for a person's `resolve` (applied or
   * not applied); `report` gives the model `outcome_unknown` at once.
   */
  onUnknown: z.enum(['ask', 'report'], { error: 'outcomes.onUnknown must be "ask" or "report"' }).default(OUTCOME_DEFAULTS.onUnknown),
  /** How long `ask` waits for a resolution; after it the model gets `outcome_unknown`. */
  resolveTimeout: positiveDuration.default(OUTCOME_DEFAULTS.resolveTimeoutMs),
});
