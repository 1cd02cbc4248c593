import { condition } from '@temporalio/workflow';
import type { PendingResume, ResumeDecision, TurnState } from '../common/types';
import { unencryptedMode } from '../common/unencrypted';
import { waitingFor } from './waiting-for';

/**
 * The wait of a turn whose model stream broke after chunks went out: it shows the step in
 * `state.pendingResume` and `TollgateWaitingFor` (`resume`) until a person decides with the
 * `resume` signal or update, or the resume timeout passes. Nothing asks the model again meanwhile.
 */
export class ResumeGate {
  private decision?: ResumeDecision;

  constructor(
    private readonly state: TurnState,
    /** Records a rejected decision in the turn's state (shared with the approvals' record). */
    private readonly record: (decision: unknown, why: string) => void,
    /** Brings the Web UI's details up to date with the state. */
    private readonly publish: () => void,
  ) {}

  /** Why a decision cannot be taken, or nothing when it can. */
  judge(decision: unknown): string | undefined {
    if (!decision || typeof decision !== 'object') return 'a resume decision must be an object { step, decision: "retry" | "stop", by? }';
    if (unencryptedMode(decision)) {
      return 'the decision arrived unencrypted; with payload encryption on, decisions must come from a client holding the keyring';
    }
    const { step, decision: verdict, by } = decision as Partial<ResumeDecision>;
    if (typeof step !== 'number' || !Number.isInteger(step)) return 'step must be a whole number (pendingResume.step in the state query)';
    if (verdict !== 'retry' && verdict !== 'stop') return `decision must be "retry" or "stop", got ${JSON.stringify(verdict)}`;
    if (by !== undefined && typeof by !== 'string') return 'by must be a string';
    const pending = this.state.pendingResume;
    if (!pending) return `no model step waits for a resume decision (step ${step})`;
    if (pending.step !== step) return `step ${step} does not wait for a resume decision; step ${pending.step} does`;
    if (this.decision) return `step ${step} was already decided (${this.decision.decision})`;
    return undefined;
  }

  /** Takes a decision if it is valid, or records it as rejected (the signal's path). */
  offer(decision: ResumeDecision): void {
    const why = this.judge(decision);
    if (why) this.record(decision, why);
    else this.accept(decision);
  }

  /** Takes a decision already judged valid (the update's path, after its validator). */
  accept({ step, decision, by }: ResumeDecision): void {
    this.decision = { step, decision, ...(by ? { by } : {}) };
  }

  /** Waits for the decision on one interrupted step; nothing when the timeout passed first. */
  async wait(pending: PendingResume, timeoutMs: number): Promise<ResumeDecision | undefined> {
    this.decision = undefined;
    this.state.pendingResume = pending;
    this.state.phase = 'interrupted';
    waitingFor.add('resume');
    this.publish();
    const decided = await condition(() => this.decision !== undefined, timeoutMs, {
      summary: `resume decision on step ${pending.step + 1}: stream cut off after ${pending.chunks} chunks`,
    });
    const decision = decided ? this.decision : undefined;
    this.decision = undefined;
    delete this.state.pendingResume;
    this.state.phase = 'model';
    waitingFor.remove('resume');
    this.publish();
    return decision;
  }
}
