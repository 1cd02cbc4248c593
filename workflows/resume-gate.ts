import { condition, workflowInfo } from '@temporalio/workflow';
import { REJECTED_DECISION_BOUNDS } from '../common/defaults';
import { resumeSigningSubject, signatureProblem } from '../common/signed-decision';
import type { PendingResume, ResumeDecision } from '../common/contract/decisions';
import type { TurnState } from '../common/contract/turn';
import { unencryptedMode } from '../common/unencrypted';
import type { ApprovalBook } from './approval-book';
import { waitingFor } from './waiting-for';

function clip(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/**
 * The wait of a turn whose model stream broke after chunks went out: it shows the step in
 * `state.pendingResume` and `TollgateWaitingFor` (`resume`) until a person decides with the
 * `resume` signal or update, or the resume timeout passes. Nothing asks the model again meanwhile.
 */
export class ResumeGate {
  private decision?: ResumeDecision;

  constructor(
    private readonly state: TurnState,
    /** The turn's approvals: their record of rejected decisions, their ledger of rounds and signatures, their signing keys and the Web UI's details. */
    private readonly approvals: ApprovalBook,
  ) {}

  /** Why a decision cannot be taken (at most a few hundred characters), or nothing when it can. */
  judge(decision: unknown): string | undefined {
    const why = this.reason(decision);
    return why === undefined ? undefined : clip(why, REJECTED_DECISION_BOUNDS.whyChars);
  }

  private reason(decision: unknown): string | undefined {
    if (!decision || typeof decision !== 'object') {
      return 'a resume decision must be an object { step, decision: "retry" | "stop", by?, round?, keyId?, signedAt?, signature? }';
    }
    if (unencryptedMode(decision)) {
      return 'the decision arrived unencrypted; with payload encryption on, decisions must come from a client holding the keyring';
    }
    const { step, decision: verdict, by, round, signature } = decision as Partial<ResumeDecision>;
    if (typeof step !== 'number' || !Number.isInteger(step)) return 'step must be a whole number (pendingResume.step in the state query)';
    if (verdict !== 'retry' && verdict !== 'stop') return `decision must be "retry" or "stop", got ${JSON.stringify(verdict)}`;
    if (by !== undefined && typeof by !== 'string') return 'by must be a string';
    const pending = this.state.pendingResume;
    if (!pending) return `no model step waits for a resume decision (step ${step})`;
    if (pending.step !== step) return `step ${step} does not wait for a resume decision; step ${pending.step} does`;
    if (this.decision) return `step ${step} was already decided (${this.decision.decision})`;
    const ledger = this.approvals.ledger;
    if (ledger.signatureTaken(signature)) return `this signed decision was already taken once in this turn (step ${step})`;
    const wrongRound = ledger.roundProblem(round, pending.round, `step ${step}`);
    if (wrongRound) return wrongRound;
    const signing = this.approvals.signing;
    if (!signing) return undefined;
    const check = { ...signing, workflowId: workflowInfo().workflowId, now: Date.now() };
    const parts = { ...(decision as ResumeDecision), ...resumeSigningSubject(step), decision: verdict, approver: by, round: pending.round };
    return signatureProblem(parts, check);
  }

  /** Takes a decision if it is valid, or records it as rejected (the signal's path). */
  offer(decision: ResumeDecision): void {
    const why = this.judge(decision);
    if (why) this.approvals.reject(decision, why);
    else this.accept(decision);
  }

  /** Takes a decision already judged valid (the update's path, after its validator); a signed one's decider is its key's name. */
  accept({ step, decision, by, keyId, signedAt, signature }: ResumeDecision): void {
    const decider = this.approvals.signing ? keyId : by;
    const round = this.state.pendingResume?.round ?? 1;
    this.decision = {
      step,
      decision,
      ...(decider ? { by: decider } : {}),
      ...(round > 1 ? { round } : {}),
      ...(this.approvals.signing ? { keyId, signedAt } : {}),
    };
    this.approvals.ledger.takeSignature(signature);
  }

  /** Waits for the decision on one interrupted step; nothing when the timeout passed first. */
  async wait(waiting: Omit<PendingResume, 'round'>, timeoutMs: number): Promise<ResumeDecision | undefined> {
    this.decision = undefined;
    const pending: PendingResume = { ...waiting, round: this.approvals.ledger.nextRound('resume', String(waiting.step)) };
    this.state.pendingResume = pending;
    this.state.phase = 'interrupted';
    waitingFor.add('resume');
    this.approvals.publish();
    const decided = await condition(() => this.decision !== undefined, timeoutMs, {
      summary: `resume decision on step ${pending.step + 1}: stream cut off after ${pending.chunks} chunks`,
    });
    const decision = decided ? this.decision : undefined;
    this.decision = undefined;
    delete this.state.pendingResume;
    this.state.phase = 'model';
    waitingFor.remove('resume');
    this.approvals.publish();
    return decision;
  }
}
