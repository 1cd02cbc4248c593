import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import type {
  ApprovalDecision,
  DecisionReceipt,
  ResolutionDecision,
  ResolutionReceipt,
  ResumeDecision,
  ResumeReceipt,
} from '../common/contract/decisions';
import type { TurnState } from '../common/contract/turn';
import type { ApprovalBook } from './approval-book';
import { decodedOrRefused, decodedValue, decodeMessage, rawQuery, rawSignal, rawUpdate } from './message-payload';
import { approvalSignal, decideUpdate, resolveSignal, resolveUpdate, resumeSignal, resumeUpdate, stateQuery } from './messages';
import type { ResolutionBook } from './resolutions';
import type { ResumeGate } from './resume-gate';

/** Whether a decision as sent carries edited arguments. */
function hasEditedArgs(decision: unknown): boolean {
  return typeof decision === 'object' && decision !== null && (decision as { args?: unknown }).args !== undefined;
}

/** What judges and takes one kind of a person's decision (a resolution, a resume decision). */
interface DecisionBook<D> {
  judge(decision: unknown): string | undefined;
  offer(decision: D): unknown;
  accept(decision: D): void;
}

/**
 * Takes one kind of decision by signal and by update: the signal records an invalid one as
 * rejected, the update's validator refuses it to its caller and leaves no event.
 */
function takeDecisions<D, R>({
  signalName,
  updateName,
  book,
  approvals,
  receipt,
}: {
  signalName: string;
  updateName: string;
  book: DecisionBook<D>;
  approvals: ApprovalBook;
  receipt: (decision: D) => R;
}): void {
  setHandler(rawSignal(signalName), (raw) => {
    const message = decodeMessage(raw);
    if (!message.decoded) approvals.rejectUndecodable(message.payload, message.why);
    else book.offer(message.value as D);
  });
  setHandler(
    rawUpdate<R>(updateName),
    (raw) => {
      const decision = decodedValue(raw) as D;
      book.accept(decision);
      return receipt(decision);
    },
    {
      validator: (raw) => {
        const why = book.judge(decodedOrRefused(raw));
        if (why) throw new Error(why);
      },
    },
  );
}

/**
 * The handlers of a turn's messages: the `state` query, `approval`/`decide`, `resolve` and `resume`.
 * Every handler takes its payload raw and decodes it itself (decodeMessage), so that no payload,
 * however malformed, encoded or sealed, fails the workflow task: a signal that does not decode is
 * recorded in `state.rejectedDecisions`, an update is refused to its caller, and the turn goes on.
 */
export function takeTurnMessages({
  state,
  approvals,
  resolutions,
  resumes,
}: {
  state: TurnState;
  approvals: ApprovalBook;
  resolutions: ResolutionBook;
  resumes: ResumeGate;
}): void {
  setHandler(rawQuery<TurnState>(stateQuery.name), () => state);
  setHandler(rawSignal(approvalSignal.name), (raw) => {
    const message = decodeMessage(raw);
    if (!message.decoded) return approvals.rejectUndecodable(message.payload, message.why);
    const decision = message.value as ApprovalDecision;
    // Edited arguments are checked (a local activity) before the decision is taken or recorded as rejected.
    return hasEditedArgs(decision) ? approvals.offerEdited(decision) : void approvals.offer(decision);
  });
  setHandler(
    rawUpdate<DecisionReceipt>(decideUpdate.name),
    async (raw): Promise<DecisionReceipt> => {
      const decision = decodedValue(raw) as ApprovalDecision;
      const receipt = { callId: decision.callId, decision: decision.decision, accepted: true as const };
      if (!hasEditedArgs(decision)) {
        approvals.accept(decision);
        return receipt;
      }
      const checked = await approvals.checkEdit(decision);
      if (checked.why !== undefined) throw ApplicationFailure.create({ type: 'invalid_edit', message: checked.why, nonRetryable: true });
      approvals.accept(decision, checked.call);
      return { ...receipt, editedDigest: checked.call.argsDigest };
    },
    {
      validator: (raw) => {
        const why = approvals.judge(decodedOrRefused(raw));
        if (why) throw new Error(why);
      },
    },
  );
  takeDecisions<ResolutionDecision, ResolutionReceipt>({
    signalName: resolveSignal.name,
    updateName: resolveUpdate.name,
    book: resolutions,
    approvals,
    receipt: ({ callId, outcome }) => ({ callId, outcome, accepted: true as const }),
  });
  takeDecisions<ResumeDecision, ResumeReceipt>({
    signalName: resumeSignal.name,
    updateName: resumeUpdate.name,
    book: resumes,
    approvals,
    receipt: ({ step, decision }) => ({ step, decision, accepted: true as const }),
  });
}
