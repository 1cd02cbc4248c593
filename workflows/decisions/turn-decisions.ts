import { condition, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../common/activity-types';
import type { PendingResume, ResumeDecision } from '../../common/contract/decisions';
import type { TurnState } from '../../common/contract/turn';
import type { TurnTelemetry } from '../turn-telemetry';
import { ApprovalBook } from './approval';
import { DecisionDesk, DecisionRecord } from './desk';
import { publishWaits } from './inbox';
import { ResolutionBook } from './resolution';
import { RESUME } from './resume';

const { checkCall } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  summary: 'check edited arguments',
  retry: { maximumAttempts: 3 },
});

/**
 * Every wait for a person of one turn, on the workflow's clock and id (the same on every replay):
 * one desk per kind over one shared record (ledger, signing keys, rejected decisions), all shown
 * through the one route of `publishWaits`.
 */
export class TurnDecisions {
  readonly record: DecisionRecord;
  readonly approvals: ApprovalBook;
  readonly resolutions: ResolutionBook;
  readonly resumes: DecisionDesk<'resume'>;

  constructor(
    readonly state: TurnState,
    telemetry: TurnTelemetry,
  ) {
    this.record = new DecisionRecord(state, {
      now: () => Date.now(),
      workflowId: () => workflowInfo().workflowId,
      publish: (changed) => publishWaits(state, changed),
    });
    this.approvals = new ApprovalBook(this.record, checkCall, {
      opened: ({ callId, tool, requestedAt, expiresAt }) =>
        telemetry.approvalOpened({ callId, tool, requestedAt: Date.parse(requestedAt), expiresAt: Date.parse(expiresAt) }),
      closed: (callId) => telemetry.approvalClosed(callId),
    });
    this.resumes = new DecisionDesk(RESUME, this.record);
    this.resolutions = new ResolutionBook(this.record);
  }

  /** Shows the turn's progress (its phase, step and tool calls) in the Web UI's details, and the approval flag. */
  publish(): void {
    this.record.host.publish();
  }

  /** Waits for the decision on one interrupted model step; nothing when the timeout passed first. */
  async awaitResume(waiting: Omit<PendingResume, 'round'>, timeoutMs: number): Promise<ResumeDecision | undefined> {
    const { resumes } = this;
    resumes.forgetAll();
    const pending = resumes.open(waiting);
    const step = String(pending.step);
    const decided = await condition(() => resumes.decisionFor(step) !== undefined, timeoutMs, {
      summary: `resume decision on step ${pending.step + 1}: stream cut off after ${pending.chunks} chunks`,
    });
    const decision = decided ? resumes.decisionFor(step) : undefined;
    resumes.forgetAll();
    resumes.close(step);
    return decision;
  }
}
