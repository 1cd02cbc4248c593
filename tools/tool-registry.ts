import { toMilliseconds } from '../common/duration';
import { EFFECT_TRAITS } from '../common/effects';
import type { RetryBackoff, ToolPolicy } from '../common/activity-types';
import type { TollgateConfig } from '../config/config-schema';
import { canonicalJson, sha256 } from './canonical-json';
import { checkToolDefinition, toolJsonSchema, type ToolDefinition } from './define-tool';

import { DEFAULT_APPROVED_SCHEDULE_TO_START_MS, DEFAULT_RETRY_BACKOFF } from '../common/defaults';

/** The backoff the config's `retry` section sets. */
export function retryBackoffFromConfig(retry: TollgateConfig['retry']): RetryBackoff {
  return {
    initialIntervalMs: toMilliseconds(retry.initialInterval),
    backoffCoefficient: retry.backoffCoefficient,
    maximumIntervalMs: toMilliseconds(retry.maximumInterval),
  };
}

/** The tools one worker serves, with config overrides applied; built once at worker start. */
export interface ToolRegistry {
  get(name: string): ToolDefinition | undefined;
  list(): ToolDefinition[];
  /** What the workflow needs of a tool, as data. */
  policy(name: string): ToolPolicy | undefined;
}

/** Builds the registry; a duplicate name or an override for a tool nobody declared stops the worker here. */
export function createToolRegistry({
  tools,
  overrides = {},
  retry = DEFAULT_RETRY_BACKOFF,
  approvedScheduleToStartMs = DEFAULT_APPROVED_SCHEDULE_TO_START_MS,
  localReads = false,
}: {
  tools: ToolDefinition[];
  overrides?: TollgateConfig['tools'];
  retry?: RetryBackoff;
  /** How long an approved irreversible call may wait for a worker to start it (config `approvals.scheduleToStart`). */
  approvedScheduleToStartMs?: number;
  /** Reads without a heartbeat timeout run as local activities (config `temporal.worker.localReads`). */
  localReads?: boolean;
}): ToolRegistry {
  const byName = new Map<string, ToolDefinition>();
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new Error(`tool "${tool.name}" is declared twice; tool names must be unique`);
    checkToolDefinition(tool);
    byName.set(tool.name, tool);
  }
  for (const [name, override] of Object.entries(overrides)) {
    const tool = byName.get(name);
    if (!tool) throw new Error(`config tools.${name}: no tool named "${name}" is registered (known: ${[...byName.keys()].join(', ')})`);
    if (override.enabled === false) {
      byName.delete(name);
      continue;
    }
    const overridden: ToolDefinition = {
      ...tool,
      timeoutMs: override.timeout === undefined ? tool.timeoutMs : toMilliseconds(override.timeout),
      maxAttempts: override.maxAttempts ?? tool.maxAttempts,
      maxOutputChars: override.maxOutputChars ?? tool.maxOutputChars,
      concurrency: override.concurrency ?? tool.concurrency,
      approvalTimeoutMs: override.approvalTimeout === undefined ? tool.approvalTimeoutMs : toMilliseconds(override.approvalTimeout),
      summaryFields: override.summaryFields ?? tool.summaryFields,
      ...(override.heartbeatTimeout === undefined ? {} : { heartbeatTimeoutMs: toMilliseconds(override.heartbeatTimeout) }),
      ...(override.needsApproval === undefined ? {} : { needsApproval: override.needsApproval }),
    };
    checkToolDefinition(overridden);
    byName.set(name, overridden);
  }
  const policies = new Map<string, ToolPolicy>();
  const policyOf = (tool: ToolDefinition): ToolPolicy => {
    const declared = {
      effect: tool.effect,
      timeoutMs: tool.timeoutMs,
      maxAttempts: tool.maxAttempts,
      approvalTimeoutMs: tool.approvalTimeoutMs,
      ...(tool.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: tool.heartbeatTimeoutMs } : {}),
      ...(EFFECT_TRAITS[tool.effect].scheduleToStartBound ? { scheduleToStartMs: approvedScheduleToStartMs } : {}),
    };
    // Whether calls wait for a person is part of what both workers must declare alike (left out when the effect decides, as before).
    const approval =
      tool.needsApproval === undefined
        ? {}
        : { needsApproval: typeof tool.needsApproval === 'function' ? 'by_arguments' : tool.needsApproval };
    const digested = { ...declared, maxOutputChars: tool.maxOutputChars, schema: toolJsonSchema(tool), ...approval };
    return {
      ...declared,
      retry,
      // A local activity runs again when its workflow task fails before the result is recorded: only for an effect any attempt of which may run again.
      ...(localReads && EFFECT_TRAITS[tool.effect].retry === 'bounded' && tool.heartbeatTimeoutMs === undefined
        ? { local: true as const }
        : {}),
      ...(tool.source ? { definitionDigest: tool.source.definitionDigest } : {}),
      policyDigest: sha256(canonicalJson(digested)),
    };
  };
  return {
    get: (name) => byName.get(name),
    list: () => [...byName.values()],
    policy(name) {
      const tool = byName.get(name);
      if (!tool) return undefined;
      let policy = policies.get(name);
      if (!policy) policies.set(name, (policy = policyOf(tool)));
      return policy;
    },
  };
}
