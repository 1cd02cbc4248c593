import { condition, getExternalWorkflowHandle, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../common/activity-types';
import type { PendingResume, ResumeDecision } from '../../common/contract/decisions';
import type { TurnLineage, TurnState } from '../../common/contract/turn';
import { waitsBelowSignal } from '../messages';
import type { TurnTelemetry } from '../turn-telemetry';
import { ApprovalBook } from './approval';
import { DecisionDesk, DecisionRecord } from './desk';
import { publishWaits } from './inbox';
import { ResolutionBook } from './resolution';
import { RESUME } from './resume';
import { WaitsBelow } from './waits-below';

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
  /** The waits of the turns below this one, as its children report them; a subagent's turn reports its own and theirs to its parent. */
  readonly below: WaitsBelow;

  constructor(
    readonly state: TurnState,
    telemetry: TurnTelemetry,
    lineage?: TurnLineage,
  ) {
    this.below = new WaitsBelow(state, lineage, {
      workflowId: () => workflowInfo().workflowId,
      // A parent that has ended (or was never there) takes no report; the child's own waits stand regardless.
      send: (parent, report) =>
        void getExternalWorkflowHandle(parent)
          .signal(waitsBelowSignal, report)
          .catch(() => undefined),
    });
    this.record = new DecisionRecord(state, {
      now: () => Date.now(),
      workflowId: () => workflowInfo().workflowId,
      publish: (changed) => {
        publishWaits(state, changed);
        this.below.changed();
      },
      lineage: () => this.below.waitLineage(),
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
