import type { BoundaryResult, CheckedToolCall, RunToolInput, ToolPolicy } from '../../common/activity-types';
import type { ApprovalBook } from '../decisions/approval';
import type { ResolutionBook } from '../decisions/resolution';

/** A call the boundary's first checks let through: it carries the policy it runs under. */
export type RunnableCall = CheckedToolCall & { policy: ToolPolicy; refusal?: undefined };

/** What a strategy needs to run one call. */
export interface EffectContext {
  taskId: string;
  call: RunnableCall;
  allowedTools?: string[];
  approvals: ApprovalBook;
  /** Writes whose outcome is unknown wait here for a person (left out: they are reported at once). */
  resolutions?: ResolutionBook;
}

/** How the workflow runs the calls of one effect level. */
export interface EffectStrategy {
  run(context: EffectContext): Promise<BoundaryResult>;
}

/** The `runTool` input of a call: what it runs, and the effect and definition the workflow decided it runs under. */
export function runToolInput({ taskId, call, allowedTools }: Pick<EffectContext, 'taskId' | 'call' | 'allowedTools'>): RunToolInput {
  const { policy } = call;
  return {
    taskId,
    callId: call.callId,
    tool: call.tool,
    args: call.args,
    allowedTools,
    effect: policy.effect,
    definitionDigest: policy.definitionDigest,
    policyDigest: policy.policyDigest,
    // The turn's agent rides on the call: the executing worker refuses it when it declares the agent differently.
    ...(call.agent ? { agent: call.agent } : {}),
  };
}
