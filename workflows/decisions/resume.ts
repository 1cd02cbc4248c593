import type { ResumeDecision } from '../../common/contract/decisions';
import { resumeSigningSubject } from '../../common/signed-decision';
import { checks, type DecisionKind } from './desk';

const step = (decision: Partial<ResumeDecision>) => `step ${decision.step}`;

/**
 * A resume decision: a model step whose stream broke after chunks went out waits in
 * `state.pendingResume` (one at a time) until a person says `retry` or `stop` (`resume`).
 */
export const RESUME: DecisionKind<'resume'> = {
  kind: 'resume',
  notAnObject: 'a resume decision must be an object { step, decision: "retry" | "stop", by?, round?, keyId?, signedAt?, signature? }',
  unencrypted: 'the decision arrived unencrypted; with payload encryption on, decisions must come from a client holding the keyring',
  checks: [
    ({ decision: { step, decision: verdict, by } }) => {
      if (typeof step !== 'number' || !Number.isInteger(step)) return 'step must be a whole number (pendingResume.step in the state query)';
      if (verdict !== 'retry' && verdict !== 'stop') return `decision must be "retry" or "stop", got ${JSON.stringify(verdict)}`;
      return by !== undefined && typeof by !== 'string' ? 'by must be a string' : undefined;
    },
    checks.waits(({ decision, desk }) => {
      const waiting = desk.waiting()[0];
      if (!waiting) return `no model step waits for a resume decision (step ${decision.step})`;
      return `step ${decision.step} does not wait for a resume decision; step ${waiting.step} does`;
    }),
    checks.undecided((subject, taken) => `step ${subject} was already decided (${taken.decision})`),
    checks.freshSignature(step),
    checks.openRound(step),
    checks.signed(),
  ],
  subject: (decision) => String(decision.step),
  pendingSubject: (pending) => String(pending.step),
  waiting: (state) => (state.pendingResume ? [state.pendingResume] : []),
  add: (state, pending) => void (state.pendingResume = pending),
  remove: (state) => void delete state.pendingResume,
  phase: 'interrupted',
  after: 'model',
  signed: (decision, pending) => ({
    ...decision,
    ...resumeSigningSubject(decision.step!),
    decision: decision.decision!,
    approver: decision.by,
    round: pending?.round,
  }),
  taken: ({ step, decision, by, keyId, signedAt }, round, signed) => {
    const decider = signed ? keyId : by;
    return {
      step,
      decision,
      ...(decider ? { by: decider } : {}),
      ...(round > 1 ? { round } : {}),
      ...(signed ? { keyId, signedAt } : {}),
    };
  },
};
