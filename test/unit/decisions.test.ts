import { describe, expect, it } from 'vitest';
import type { CheckCallInput, CheckedToolCall } from '../../common/activity-types';
import type { ApprovalDecision, PendingApproval } from '../../common/contract/decisions';
import type { TurnState } from '../../common/contract/turn';
import { REJECTED_DECISION_BOUNDS } from '../../common/defaults';
import { bytesBase64, publicKeyOf, resumeSigningSubject, signDecisionFields } from '../../common/signed-decision';
import { UNENCRYPTED_MARK } from '../../common/unencrypted';
import { ApprovalBook } from '../../workflows/decisions/approval';
import { DecisionDesk, DecisionRecord, type Kind } from '../../workflows/decisions/desk';
import { ResolutionBook } from '../../workflows/decisions/resolution';
import { RESUME } from '../../workflows/decisions/resume';
import { startingState } from '../../workflows/turn/turn-run';

const WORKFLOW_ID = 'turn-unit';
const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const PRIVATE_KEY = Uint8Array.from({ length: 32 }, (_, index) => index + 1);

/** The three desks of one turn on a fake host: a fixed clock and id, and a list of what was published. */
function desks(options: { signed?: boolean; checkCall?: (input: CheckCallInput) => Promise<CheckedToolCall> } = {}) {
  const state: TurnState = { ...startingState('task-unit'), phase: 'tools' };
  const published: Array<Kind | undefined> = [];
  const observed: string[] = [];
  const record = new DecisionRecord(state, { now: () => NOW, workflowId: () => WORKFLOW_ID, publish: (kind) => void published.push(kind) });
  if (options.signed) record.signing = { publicKeys: { alice: bytesBase64(publicKeyOf(PRIVATE_KEY)) }, maxAgeMs: 3_600_000 };
  const checkCall = options.checkCall ?? (() => Promise.reject(new Error('no edits in this test')));
  const approvals = new ApprovalBook(record, checkCall, {
    opened: (pending) => void observed.push(`opened ${pending.callId}`),
    closed: (callId) => void observed.push(`closed ${callId}`),
  });
  const resumes = new DecisionDesk(RESUME, record);
  const resolutions = new ResolutionBook(record);
  return { state, record, approvals, resumes, resolutions, published, observed };
}

function waitingCall(callId: string): Omit<PendingApproval, 'round'> {
  return {
    callId,
    tool: 'send_email',
    args: { to: 'a@example.com' },
    argsDigest: `digest-${callId}`,
    requestedAt: new Date(NOW).toISOString(),
    expiresAt: new Date(NOW + 60_000).toISOString(),
  };
}

function signedApproval(callId: string, round?: number): ApprovalDecision {
  const signedAt = new Date(NOW - 1_000).toISOString();
  const fields = {
    callId,
    decision: 'approve' as const,
    argsDigest: `digest-${callId}`,
    approver: 'alice',
    signedAt,
    workflowId: WORKFLOW_ID,
  };
  const signature = signDecisionFields(round ? { ...fields, round } : fields, PRIVATE_KEY);
  return { callId, decision: 'approve', argsDigest: `digest-${callId}`, keyId: 'alice', signedAt, signature, ...(round ? { round } : {}) };
}

describe('the decisions core (no Temporal)', () => {
  it('takes a valid approval, lists it, and shows the wait opening and closing', () => {
    const { state, approvals, published, observed } = desks();
    const pending = approvals.open(waitingCall('call-0-0'));
    expect(pending.round).toBe(1);
    expect(state.phase).toBe('awaiting_approval');
    expect(approvals.offer({ callId: 'call-0-0', decision: 'approve', approver: 'bob', argsDigest: 'digest-call-0-0' })).toBeUndefined();
    expect(approvals.decisionFor('call-0-0')).toEqual({ callId: 'call-0-0', decision: 'approve', approver: 'bob', reason: undefined });
    expect(state.decisions).toHaveLength(1);
    approvals.close('call-0-0');
    expect(state.phase).toBe('tools');
    expect(state.pendingApprovals).toEqual([]);
    expect(published).toEqual(['approval', 'approval']);
    expect(observed).toEqual(['opened call-0-0', 'closed call-0-0']);
    expect(state.rejectedDecisions).toEqual([]);
  });

  it('records a decision for a call id that does not wait, and one for a call already decided', () => {
    const { state, approvals } = desks();
    approvals.open(waitingCall('call-0-0'));
    expect(approvals.offer({ callId: 'call-9-9', decision: 'approve' })).toBe('no call call-9-9 waits for approval');
    approvals.offer({ callId: 'call-0-0', decision: 'deny', reason: 'not today' });
    expect(approvals.offer({ callId: 'call-0-0', decision: 'approve' })).toBe('call call-0-0 was already decided');
    expect(state.rejectedDecisions.map(({ why }) => why)).toEqual([
      'no call call-9-9 waits for approval',
      'call call-0-0 was already decided',
    ]);
    expect(state.rejectedDecisions[0]!.at).toBe(new Date(NOW).toISOString());
    expect(approvals.decisionFor('call-0-0')?.decision).toBe('deny');
  });

  it('refuses a decision that arrives after its wait expired', () => {
    const { approvals } = desks();
    approvals.open(waitingCall('call-0-0'));
    approvals.close('call-0-0');
    expect(approvals.judge({ callId: 'call-0-0', decision: 'approve' })).toBe('no call call-0-0 waits for approval');
    expect(approvals.decisionFor('call-0-0')).toBeUndefined();
  });

  it('refuses a stale decision: a call waiting again takes only one that names its new round', () => {
    const { approvals } = desks();
    approvals.open(waitingCall('call-0-0'));
    approvals.offer({ callId: 'call-0-0', decision: 'approve' });
    approvals.close('call-0-0');
    approvals.forget('call-0-0');
    expect(approvals.open(waitingCall('call-0-0')).round).toBe(2);
    expect(approvals.judge({ callId: 'call-0-0', decision: 'approve' })).toMatch(
      /^round is required: call call-0-0 waits for the 2nd time/,
    );
    expect(approvals.judge({ callId: 'call-0-0', decision: 'approve', round: 1 })).toBe(
      'round 1 is not the wait open now: call call-0-0 waits in round 2',
    );
    expect(approvals.offer({ callId: 'call-0-0', decision: 'approve', round: 2 })).toBeUndefined();
    expect(approvals.decisionFor('call-0-0')?.round).toBe(2);
  });

  it('takes a signed approval once: the same signature sent again for a later wait is refused', () => {
    const { approvals } = desks({ signed: true });
    approvals.open(waitingCall('call-0-0'));
    const signed = signedApproval('call-0-0');
    expect(approvals.offer(signed)).toBeUndefined();
    expect(approvals.decisionFor('call-0-0')).toMatchObject({ approver: 'alice', keyId: 'alice' });
    approvals.close('call-0-0');
    approvals.forget('call-0-0');
    approvals.open(waitingCall('call-0-0'));
    expect(approvals.judge({ ...signed, round: 2 })).toBe('this signed decision was already taken once in this turn (call call-0-0)');
    expect(approvals.judge(signedApproval('call-0-0', 2))).toBeUndefined();
  });

  it('refuses unsigned and wrongly signed decisions when the worker has approver keys', () => {
    const { approvals } = desks({ signed: true });
    approvals.open(waitingCall('call-0-0'));
    expect(approvals.judge({ callId: 'call-0-0', decision: 'approve' })).toMatch(/^argsDigest is required/);
    expect(approvals.judge({ callId: 'call-0-0', decision: 'approve', argsDigest: 'digest-call-0-0' })).toMatch(
      /^the decision is unsigned/,
    );
    const forged = { ...signedApproval('call-0-0'), decision: 'deny' as const };
    expect(approvals.judge(forged)).toMatch(/^signature does not verify with key "alice"/);
  });

  it('records what did not decode, bounded like any rejected decision', () => {
    const { state, record } = desks();
    record.rejectUndecodable({ encoding: 'binary/protobuf', bytes: 12 }, 'x'.repeat(1_000));
    expect(state.rejectedDecisions).toHaveLength(1);
    expect(state.rejectedDecisions[0]!.decision).toEqual({ undecodable: { encoding: 'binary/protobuf', bytes: 12 } });
    expect(state.rejectedDecisions[0]!.why).toHaveLength(REJECTED_DECISION_BOUNDS.whyChars);
  });

  it('keeps the newest rejected decisions and counts the ones dropped', () => {
    const { state, approvals } = desks();
    for (let index = 0; index < REJECTED_DECISION_BOUNDS.kept + 3; index++)
      approvals.offer({ callId: `call-${index}`, decision: 'approve' });
    expect(state.rejectedDecisions).toHaveLength(REJECTED_DECISION_BOUNDS.kept);
    expect(state.rejectedDecisionsDropped).toBe(3);
    expect(state.rejectedDecisions[0]!.why).toBe('no call call-3 waits for approval');
    const large = { callId: 'call-x', decision: 'approve', note: 'y'.repeat(5_000) } as unknown as ApprovalDecision;
    approvals.offer(large);
    expect(state.rejectedDecisions.at(-1)!.decision).toMatchObject({ truncated: true, json: expect.any(String) });
  });

  it('refuses what is not a decision, and one that arrived unencrypted', () => {
    const { approvals, resolutions, resumes } = desks();
    expect(approvals.judge('approve')).toMatch(/^a decision must be an object/);
    expect(resolutions.judge(null)).toMatch(/^a resolution must be an object/);
    expect(resumes.judge(7)).toMatch(/^a resume decision must be an object/);
    const marked = Object.defineProperty({ callId: 'call-0-0', decision: 'approve' }, UNENCRYPTED_MARK, { value: 'decisions' });
    expect(approvals.judge(marked)).toMatch(/^the decision arrived unencrypted/);
    expect(resolutions.judge(marked)).toMatch(/^the resolution arrived unencrypted/);
  });

  it('checks edited arguments before taking them, and records the edit', async () => {
    const checked = (args: unknown): CheckedToolCall =>
      ({ callId: 'call-0-0', tool: 'send_email', args, argsDigest: 'digest-edited' }) as unknown as CheckedToolCall;
    const { state, approvals } = desks({ checkCall: async ({ args }) => checked(args) });
    approvals.open(waitingCall('call-0-0'));
    const edited = { callId: 'call-0-0', decision: 'approve' as const, argsDigest: 'digest-call-0-0', args: { to: 'b@example.com' } };
    expect(approvals.judge({ ...edited, decision: 'deny' })).toBe('args (edited arguments) go only with an approval');
    await approvals.offerEdited(edited);
    expect(approvals.decisionFor('call-0-0')).toMatchObject({ editedDigest: 'digest-edited', args: { to: 'b@example.com' } });
    expect(approvals.editFor('call-0-0')?.originalDigest).toBe('digest-call-0-0');
    approvals.forget('call-0-0');
    expect(approvals.editFor('call-0-0')).toBeUndefined();
    expect(state.decisions).toHaveLength(1);
  });

  it('takes a resolution naming the digest, refuses another digest, and forgets it once taken', () => {
    const { state, resolutions, published } = desks();
    resolutions.open({
      callId: 'call-1-0',
      tool: 'transfer',
      args: {},
      argsDigest: 'digest-1',
      reason: 'cut off',
      since: new Date(NOW).toISOString(),
      expiresAt: new Date(NOW + 1_000).toISOString(),
    });
    expect(state.phase).toBe('awaiting_resolution');
    expect(resolutions.offer({ callId: 'call-1-0', outcome: 'applied', argsDigest: 'digest-2' })).toBe(
      'argsDigest does not match the arguments of call call-1-0',
    );
    expect(resolutions.offer({ callId: 'call-1-0', outcome: 'applied', argsDigest: 'digest-1', resolver: 'carol' })).toBeUndefined();
    expect(resolutions.judge({ callId: 'call-1-0', outcome: 'not_applied', argsDigest: 'digest-1' })).toBe(
      'call call-1-0 was already resolved',
    );
    expect(resolutions.take('call-1-0')).toMatchObject({ outcome: 'applied', resolver: 'carol' });
    expect(resolutions.has('call-1-0')).toBe(false);
    resolutions.close('call-1-0');
    expect(state.resolutions).toHaveLength(1);
    expect(published).toEqual(['resolution', 'resolution']);
  });

  it('takes a resume decision for the step that waits only, once, signed by the step', () => {
    const { state, resumes } = desks({ signed: true });
    expect(resumes.judge({ step: 0, decision: 'retry' })).toBe('no model step waits for a resume decision (step 0)');
    resumes.open({
      step: 2,
      chunks: 3,
      partialText: 'par',
      since: new Date(NOW).toISOString(),
      expiresAt: new Date(NOW + 1_000).toISOString(),
    });
    expect(state.phase).toBe('interrupted');
    expect(resumes.judge({ step: 1, decision: 'retry' })).toBe('step 1 does not wait for a resume decision; step 2 does');
    const signedAt = new Date(NOW).toISOString();
    const fields = { ...resumeSigningSubject(2), decision: 'stop' as const, approver: 'alice', signedAt, workflowId: WORKFLOW_ID };
    const decision = { step: 2, decision: 'stop' as const, keyId: 'alice', signedAt, signature: signDecisionFields(fields, PRIVATE_KEY) };
    expect(resumes.offer(decision)).toBeUndefined();
    expect(resumes.decisionFor('2')).toEqual({ step: 2, decision: 'stop', by: 'alice', keyId: 'alice', signedAt });
    expect(resumes.judge(decision)).toBe('step 2 was already decided (stop)');
    resumes.close('2');
    expect(state.pendingResume).toBeUndefined();
    expect(state.phase).toBe('model');
  });
});
