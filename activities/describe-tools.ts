import { approversOf } from '../common/approver-groups';
import { approverPublicKeysFromEnvironment } from '../common/approver-keys';
import type { ToolCatalogue } from '../common/contract/tools';
import { EFFECT_TRAITS } from '../common/effects';
import type { TollgateConfig } from '../config/config-schema';
import { toolJsonSchema } from '../tools/define-tool';
import type { ToolRegistry } from '../tools/tool-registry';

/**
 * The `describeTools` activity: every tool this worker serves as a person deciding on its calls is
 * shown it (description, effect, policy, argument schema, who may decide), and the approver keys
 * its turns require. Built once: a worker's tools and config do not change while it runs.
 */
export function createDescribeTools({
  registry,
  config,
  env = process.env,
}: {
  registry: ToolRegistry;
  config: TollgateConfig;
  env?: NodeJS.ProcessEnv;
}) {
  const keys = approverPublicKeysFromEnvironment(config.approvals.publicKeysEnv, env);
  const catalogue: ToolCatalogue = {
    tools: registry.list().map((tool) => {
      const policy = registry.policy(tool.name)!;
      const approvers = approversOf(config.approvals.groups, tool.name);
      return {
        name: tool.name,
        description: tool.description,
        effect: tool.effect,
        effectLabel: EFFECT_TRAITS[tool.effect].label,
        timeoutMs: tool.timeoutMs,
        maxAttempts: tool.maxAttempts,
        maxOutputChars: tool.maxOutputChars,
        approvalTimeoutMs: tool.approvalTimeoutMs,
        jsonSchema: toolJsonSchema(tool),
        policyDigest: policy.policyDigest,
        ...(tool.source ? { source: { name: tool.source.name, definitionDigest: tool.source.definitionDigest } } : {}),
        ...(approvers ? { approvers } : {}),
      };
    }),
    ...(keys ? { approverKeys: Object.keys(keys) } : {}),
  };
  return async function describeTools(): Promise<ToolCatalogue> {
    return catalogue;
  };
}
