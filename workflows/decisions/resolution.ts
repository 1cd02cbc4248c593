import type { ResolutionDecision } from '../../common/contract/decisions';
import { OUTCOME_DEFAULTS } from '../../common/defaults';
import { checks, DecisionDesk, type DecisionKind, type DecisionRecord } from './desk';

const call = (resolution: Partial<ResolutionDecision>) => `call ${resolution.callId}`;

/** A resolution: a write whose outcome is unknown waits in `pendingResolutions` until a person says whether it took effect (`resolve`). */
export const RESOLUTION: DecisionKind<'resolution'> = {
  kind: 'resolution',
  notAnObject: 'a resolution must be an object { callId, outcome, argsDigest, resolver?, note?, keyId?, signedAt?, signature? }',
  unencrypted: 'the resolution arrived unencrypted; with payload encryption on, resolutions must come from a client holding the keyring',
  checks: [
    ({ decision: { callId, outcome, note } }) => {
      if (typeof callId !== 'string') return 'callId must be a string';
      if (outcome !== 'applied' && outcome !== 'not_applied')
        return `outcome must be "applied" or "not_applied", got ${JSON.stringify(outcome)}`;
      return note !== undefined && typeof note !== 'string' ? 'note must be a string' : undefined;
    },
    checks.waits(({ decision }) => `no call ${decision.callId} waits for a resolution`),
    checks.undecided((callId) => `call ${callId} was already resolved`),
    checks.freshSignature(call),
    checks.openRound(call),
    checks.inGroup<'resolution'>(
      (resolution) => resolution.resolver,
      (pending) => pending.tool,
    ),
    ({ decision: { callId, argsDigest }, pending }) => {
      if (typeof argsDigest !== 'string') {
        return `argsDigest is required: send the digest of the arguments of call ${callId} (pendingResolutions in the state query)`;
      }
      const named = argsDigest === pending!.argsDigest || argsDigest === pending!.shownDigest;
      return named ? undefined : `argsDigest does not match the arguments of call ${callId}`;
    },
    checks.signed(),
  ],
  subject: (resolution) => resolution.callId!,
  pendingSubject: (pending) => pending.callId,
  waiting: (state) => (state.pendingResolutions ??= []),
  add: (state, pending) => void (state.pendingResolutions ??= []).push(pending),
  remove(state, callId) {
    const list = (state.pendingResolutions ??= []);
    const index = list.findIndex((entry) => entry.callId === callId);
    if (index >= 0) list.splice(index, 1);
  },
  phase: 'awaiting_resolution',
  after: 'tools',
  signed: ({ resolver, ...rest }, pending) => ({
    ...rest,
    approver: resolver,
    callId: rest.callId!,
    decision: rest.outcome!,
    argsDigest: rest.argsDigest!,
    round: pending?.round,
  }),
  taken({ callId, outcome, argsDigest, resolver, note, keyId, signedAt }, round, signed) {
    const taken: ResolutionDecision = signed
      ? { callId, outcome, argsDigest, resolver: keyId, note, keyId, signedAt }
      : { callId, outcome, argsDigest, resolver, note };
    if (round > 1) taken.round = round;
    return taken;
  },
  record: (state, taken) => void state.resolutions!.push(taken),
  init(state) {
    state.pendingResolutions = [];
    state.resolutions = [];
  },
};

/**
 * The writes of one turn whose outcome is unknown and wait for a person to say whether they took
 * effect: the desk of the `resolution` kind, with how the turn asks (config `outcomes`).
 */
export class ResolutionBook extends DecisionDesk<'resolution'> {
  /** `ask` waits for a person; `report` gives the model `outcome_unknown` at once (config `outcomes.onUnknown`). */
  mode: 'ask' | 'report' = 'report';
  /** How long `ask` waits (config `outcomes.resolveTimeout`). */
  timeoutMs: number = OUTCOME_DEFAULTS.resolveTimeoutMs;

  constructor(record: DecisionRecord) {
    super(RESOLUTION, record);
  }

  /** The resolution of a call, once there is one; `take` forgets it, so that the call may wait again later. */
  take(callId: string): ResolutionDecision | undefined {
    const taken = this.decisionFor(callId);
    this.forget(callId);
    return taken;
  }

  /** Whether a call decided is there. */
  has(callId: string): boolean {
    return this.decisionFor(callId) !== undefined;
  }
}
