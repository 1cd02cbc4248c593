import type { ToolEvent } from '../common/contract/tools';
import type { AgentTurnResult } from '../common/contract/turn';
import { describeStep, type ScriptStep } from './script';
import { TollgateError } from '../common/tollgate-error';

/** Codes of calls the boundary refused before any handler ran. */
const REFUSALS = new Set(['unknown_tool', 'invalid_arguments', 'forbidden']);

/** One script step next to what the turn did with it. */
export interface StepReport {
  step: number;
  expected: string;
  did: string;
  followed: boolean;
}

/** Whether a turn followed its script, step by step. */
export interface ScriptReport {
  workflowId: string;
  status: AgentTurnResult['status'];
  followed: boolean;
  steps: StepReport[];
  /** Model requests beyond the script's last step (answered with an error). */
  extraRequests: number;
}

function describeCall(event: ToolEvent): string {
  const executions = `${event.executions} execution${event.executions === 1 ? '' : 's'}`;
  return event.status === 'success' ? `ran: success, ${executions}` : `ran: ${event.status} (${event.code}), ${executions}`;
}

/**
 * Lines up a turn's script with what the turn did: each step the model was asked for is consumed
 * in order, and each call step against the turn's next tool event. A call the boundary refused
 * (other than a malformed one the script meant), or a step the turn never reached, is not followed.
 */
export function scriptReport({
  workflowId,
  steps,
  requests,
  result,
}: {
  workflowId: string;
  steps: ScriptStep[];
  requests: number;
  result: AgentTurnResult;
}): ScriptReport {
  const events = [...result.toolCalls];
  const reports = steps.map((step, index): StepReport => {
    const expected = describeStep(step);
    const line = (did: string, followed: boolean) => ({ step: index + 1, expected, did, followed });
    if (index >= requests) return line(`never reached (the turn ended: ${result.status})`, false);
    if (step.kind !== 'toolCall' && step.kind !== 'malformedToolCall') return line('answered', true);
    const event = events.shift();
    if (!event) return line(`never reached: no tool call followed (the turn ended: ${result.status})`, false);
    const refused = event.executions === 0 && event.code !== undefined && REFUSALS.has(event.code);
    if (step.kind === 'malformedToolCall') {
      return refused && event.code === 'invalid_arguments'
        ? line('refused (invalid_arguments), as scripted', true)
        : line(describeCall(event), false);
    }
    if (event.tool !== step.tool) return line(`called ${event.tool} instead`, false);
    return refused ? line(`refused (${event.code})`, false) : line(describeCall(event), true);
  });
  const extraRequests = Math.max(0, requests - steps.length);
  return {
    workflowId,
    status: result.status,
    followed: reports.every((report) => report.followed) && extraRequests === 0,
    steps: reports,
    extraRequests,
  };
}

/** The report as a table: the script on the left, the turn on the right, `✗` on each step not followed. */
export function formatScriptReport(report: ScriptReport): string {
  const width = Math.min(60, Math.max(6, ...report.steps.map((step) => `${step.step}. ${step.expected}`.length)));
  const cell = (text: string) => (text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width));
  const lines = [`  ${cell('script')}  turn`];
  for (const step of report.steps) lines.push(`${step.followed ? ' ' : '✗'} ${cell(`${step.step}. ${step.expected}`)}  ${step.did}`);
  if (report.extraRequests > 0) {
    lines.push(`✗ ${cell(`(no step ${report.steps.length + 1})`)}  the turn asked the model ${report.extraRequests} more time(s)`);
  }
  return lines.join('\n');
}

/** A turn that did not do what its script said. */
export class ScriptNotFollowedError extends TollgateError {
  static override readonly marker = 'tollgate.error.ScriptNotFollowedError';
  override name = 'ScriptNotFollowedError';
  constructor(readonly report: ScriptReport) {
    super(`turn ${report.workflowId} did not follow its script (status ${report.status}):\n${formatScriptReport(report)}`);
  }
}

/** Throws a {@link ScriptNotFollowedError} with the step-by-step table when the turn did not follow its script. */
export function expectScriptFollowed(report: ScriptReport): void {
  if (!report.followed) throw new ScriptNotFollowedError(report);
}
