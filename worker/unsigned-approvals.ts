import { EFFECT_TRAITS } from '../common/effects';
import type { TollgateConfig } from '../config/config-schema';

/** Whether an address (`host:port`) names this machine: the embedded dev server's kind of place. */
function isLoopback(address: string): boolean {
  const host = address
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '')
    .toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * What a worker says at start when people's decisions prove nothing: it serves tools that wait for
 * a person, on a server other than one on this machine, and no approver keys are configured, so
 * anyone who can reach the server decides, under any name. Nothing when that is not so.
 */
export function unsignedApprovalsWarning(
  config: TollgateConfig,
  tools: ReadonlyArray<{ name: string; effect: keyof typeof EFFECT_TRAITS; needsApproval?: boolean | ((args: never) => boolean) }>,
): string | undefined {
  if (config.approvals.publicKeysEnv) return undefined;
  if (isLoopback(config.temporal.address)) return undefined;
  // A tool asks by its effect, or by its own needsApproval (true, or a function that may say so for some arguments).
  const asks = (tool: (typeof tools)[number]) => EFFECT_TRAITS[tool.effect].needsApproval || (tool.needsApproval ?? false) !== false;
  const asking = tools.filter(asks).map((tool) => tool.name);
  if (asking.length === 0) return undefined;
  const shown = asking.length > 5 ? `${asking.slice(0, 5).join(', ')} and ${asking.length - 5} more` : asking.join(', ');
  return (
    `approvals: ${shown} wait for a person's approval, and no approver keys are configured (approvals.publicKeysEnv): ` +
    `on ${config.temporal.address}, anyone who can send a signal decides, under any name they give; configure approver keys (docs/approvals.md)`
  );
}
