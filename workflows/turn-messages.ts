import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import type { ApprovalDecision, DecisionReceipt, ResolutionReceipt, ResumeReceipt } from '../common/contract/decisions';
import type { TurnState } from '../common/contract/turn';
import type { Decision, DecisionDesk, DecisionRecord, Kind } from './decisions/desk';
import type { TurnDecisions } from './decisions/turn-decisions';
import { FAILURE_TYPE } from '../common/failures';
import { decodedOrRefused, decodedValue, decodeMessage, rawQuery, rawSignal, rawUpdate } from './message-payload';
import {
  approvalSignal,
  decideUpdate,
  resolveSignal,
  resolveUpdate,
  resumeSignal,
  resumeUpdate,
  stateQuery,
  waitsBelowSignal,
} from './messages';
import type { WaitsReport } from '../common/contract/decisions';

/** Whether a decision as sent carries edited arguments. */
function hasEditedArgs(decision: unknown): boolean {
  return typeof decision === 'object' && decision !== null && (decision as { args?: unknown }).args !== undefined;
}

/** How one kind of decision arrives: its signal and update, how it is judged, and how each path takes it. */
interface DecisionRoute<D, R> {
  signalName: string;
  updateName: string;
  judge(decision: unknown): string | undefined;
  /** The signal's path: takes a valid decision, records an invalid one as rejected. */
  offer(decision: D): void | Promise<void>;
  /** The update's path, after its validator: takes the decision and answers with its receipt. */
  take(decision: D): R | Promise<R>;
}

/** The route of a kind whose decisions its desk takes as they are: the signal offers, the update accepts and answers with `receipt`. */
function deskRoute<K extends Kind, R>(
  signalName: string,
  updateName: string,
  desk: DecisionDesk<K>,
  receipt: (decision: Decision<K>) => R,
): DecisionRoute<Decision<K>, R> {
  return {
    signalName,
    updateName,
    judge: (decision) => desk.judge(decision),
    offer: (decision) => void desk.offer(decision),
    take(decision) {
      desk.accept(decision);
      return receipt(decision);
    },
  };
}

/**
 * Takes one kind of decision by signal and by update: the signal records an invalid one (or one
 * that does not decode) as rejected, the update's validator refuses it to its caller and leaves no event.
 */
function takeDecisions<D, R>(route: DecisionRoute<D, R>, record: DecisionRecord): void {
  setHandler(rawSignal(route.signalName), (raw) => {
    const message = decodeMessage(raw);
    if (!message.decoded) return record.rejectUndecodable(message.payload, message.why);
    return route.offer(message.value as D);
  });
  setHandler(rawUpdate<R>(route.updateName), (raw) => route.take(decodedValue(raw) as D), {
    validator: (raw) => {
      const why = route.judge(decodedOrRefused(raw));
      if (why) throw new Error(why);
    },
  });
}

/**
 * The handlers of a turn's messages: the `state` query, `approval`/`decide`, `resolve` and `resume`,
 * every kind of decision taken the same way. Every handler takes its payload raw and decodes it
 * itself (decodeMessage), so that no payload, however malformed, encoded or sealed, fails the
 * workflow task: a signal that does not decode is recorded in `state.rejectedDecisions`, an update is
 * refused to its caller, and the turn goes on.
 */
export function takeTurnMessages(state: TurnState, { record, approvals, resolutions, resumes, below }: TurnDecisions): void {
  setHandler(rawQuery<TurnState>(stateQuery.name), () => state);
  // A child's report of what waits in it and below it: one that is not a well-formed report from below is recorded as rejected.
  setHandler(rawSignal(waitsBelowSignal.name), (raw) => {
    const message = decodeMessage(raw);
    if (!message.decoded) return record.rejectUndecodable(message.payload, message.why);
    const why = below.judge(message.value);
    if (why) return record.reject(message.value, why);
    below.take(message.value as WaitsReport);
    // The Web UI's details list the waits below too.
    record.host.publish();
  });
  takeDecisions<ApprovalDecision, DecisionReceipt>(
    {
      signalName: approvalSignal.name,
      updateName: decideUpdate.name,
      judge: (decision) => approvals.judge(decision),
      // Edited arguments are checked (a local activity) before the decision is taken or recorded as rejected.
      offer: (decision) => (hasEditedArgs(decision) ? approvals.offerEdited(decision) : void approvals.offer(decision)),
      async take(decision) {
        const receipt = { callId: decision.callId, decision: decision.decision, accepted: true as const };
        if (!hasEditedArgs(decision)) {
          approvals.accept(decision);
          return receipt;
        }
        const checked = await approvals.checkEdit(decision);
        if (checked.why !== undefined)
          throw ApplicationFailure.create({ type: FAILURE_TYPE.invalid_edit, message: checked.why, nonRetryable: true });
        approvals.accept(decision, checked.call);
        return { ...receipt, editedDigest: checked.call.argsDigest };
      },
    },
    record,
  );
  takeDecisions(
    deskRoute(resolveSignal.name, resolveUpdate.name, resolutions, ({ callId, outcome }): ResolutionReceipt => ({
      callId,
      outcome,
      accepted: true,
    })),
    record,
  );
  takeDecisions(
    deskRoute(resumeSignal.name, resumeUpdate.name, resumes, ({ step, decision }): ResumeReceipt => ({ step, decision, accepted: true })),
    record,
  );
}
