import { describe, expect, it } from 'vitest';
import { approversOf, groupProblem, toolMatches } from '../../common/approver-groups';
import type { PendingApproval } from '../../common/contract/decisions';
import type { TurnState } from '../../common/contract/turn';
import { bytesBase64, publicKeyOf, signDecisionFields } from '../../common/signed-decision';
import { parseConfig } from '../../config/load-config';
import { ApprovalBook } from '../../workflows/decisions/approval';
import { DecisionRecord } from '../../workflows/decisions/desk';
import { ResolutionBook } from '../../workflows/decisions/resolution';
import { startingState } from '../../workflows/turn/turn-run';
import { unsignedApprovalsWarning } from '../../worker/unsigned-approvals';

const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const KEYS = {
  alice: Uint8Array.from({ length: 32 }, (_, index) => index + 1),
  bob: Uint8Array.from({ length: 32 }, (_, index) => 99 - index),
};
const WHERE = { source: 'test.yaml', baseDir: '/tmp', env: {} };
const GROUPS = { send_message: ['alice'], shell: ['ops-lead'], 'files__*': ['bob'], nobody_tool: [] };

function books({ signed }: { signed: boolean }) {
  const state: TurnState = { ...startingState('task-groups'), phase: 'tools' };
  const record = new DecisionRecord(state, { now: () => NOW, workflowId: () => 'turn-groups', publish: () => undefined });
  record.groups = GROUPS;
  if (signed) {
    record.signing = {
      publicKeys: Object.fromEntries(Object.entries(KEYS).map(([name, key]) => [name, bytesBase64(publicKeyOf(key))])),
      maxAgeMs: 3_600_000,
    };
  }
  const approvals = new ApprovalBook(record, () => Promise.reject(new Error('no edits here')));
  const resolutions = new ResolutionBook(record);
  return { state, approvals, resolutions };
}

function waiting(tool: string, callId: string): Omit<PendingApproval, 'round'> {
  return {
    callId,
    tool,
    args: {},
    argsDigest: `d-${callId}`,
    requestedAt: new Date(NOW).toISOString(),
    expiresAt: new Date(NOW + 60_000).toISOString(),
  };
}

function signedBy(name: keyof typeof KEYS, callId: string, decision: 'approve' | 'applied' = 'approve') {
  const signedAt = new Date(NOW - 1_000).toISOString();
  const fields = { callId, decision, argsDigest: `d-${callId}`, approver: name, signedAt, workflowId: 'turn-groups' };
  return { keyId: name, signedAt, signature: signDecisionFields(fields, KEYS[name]) };
}

describe('approver groups (config approvals.groups)', () => {
  it('match a tool by its name, else by the first * pattern, character by character', () => {
    expect(toolMatches('files__*', 'files__write_file')).toBe(true);
    expect(toolMatches('files__*', 'other__write_file')).toBe(false);
    expect(toolMatches('*__write_*', 'files__write_file')).toBe(true);
    expect(toolMatches('a*a', 'a')).toBe(false);
    expect(toolMatches('a*b*c', 'abc')).toBe(true);
    expect(toolMatches('a*b*c', 'acb')).toBe(false);
    expect(approversOf(GROUPS, 'send_message')).toEqual(['alice']);
    expect(approversOf(GROUPS, 'files__read_file')).toEqual(['bob']);
    expect(approversOf(GROUPS, 'save_draft')).toBeUndefined();
    expect(approversOf(GROUPS, 'toString')).toBeUndefined();
    expect(groupProblem(GROUPS, 'nobody_tool', 'alice')).toBe(
      'alice may not decide on calls of nobody_tool: only nobody (an empty group) may (approvals.groups)',
    );
  });

  it('let a signed approval through from the group, and record one from another approver as rejected, with why', () => {
    const { state, approvals } = books({ signed: true });
    approvals.open(waiting('send_message', 'call-1'));
    const byBob = { callId: 'call-1', decision: 'approve' as const, argsDigest: 'd-call-1', ...signedBy('bob', 'call-1') };
    expect(approvals.offer(byBob)).toBe('bob may not decide on calls of send_message: only alice may (approvals.groups)');
    expect(state.rejectedDecisions.at(-1)?.why).toBe('bob may not decide on calls of send_message: only alice may (approvals.groups)');
    const byAlice = { callId: 'call-1', decision: 'approve' as const, argsDigest: 'd-call-1', ...signedBy('alice', 'call-1') };
    expect(approvals.offer(byAlice)).toBeUndefined();
    expect(state.decisions.at(-1)).toMatchObject({ callId: 'call-1', approver: 'alice' });
  });

  it('judge a signed decision by its key, not by the approver it claims', () => {
    const { approvals } = books({ signed: true });
    approvals.open(waiting('send_message', 'call-2'));
    const claimed = {
      callId: 'call-2',
      decision: 'approve' as const,
      argsDigest: 'd-call-2',
      approver: 'alice',
      ...signedBy('bob', 'call-2'),
    };
    expect(approvals.offer(claimed)).toBe('bob may not decide on calls of send_message: only alice may (approvals.groups)');
  });

  it('hold resolutions to the same groups, patterns included', () => {
    const { resolutions } = books({ signed: true });
    resolutions.open({
      callId: 'call-3',
      tool: 'files__write_file',
      args: {},
      argsDigest: 'd-call-3',
      reason: 'cut off',
      since: new Date(NOW).toISOString(),
      expiresAt: new Date(NOW + 60_000).toISOString(),
    });
    const alice = signedBy('alice', 'call-3', 'applied');
    expect(resolutions.offer({ callId: 'call-3', outcome: 'applied', argsDigest: 'd-call-3', ...alice })).toBe(
      'alice may not decide on calls of files__write_file: only bob may (approvals.groups)',
    );
    const bob = signedBy('bob', 'call-3', 'applied');
    expect(resolutions.offer({ callId: 'call-3', outcome: 'applied', argsDigest: 'd-call-3', ...bob })).toBeUndefined();
  });

  it('without approver keys, hold the named approver to the group and refuse a decision that names none', () => {
    const { approvals } = books({ signed: false });
    approvals.open(waiting('shell', 'call-4'));
    expect(approvals.offer({ callId: 'call-4', decision: 'approve', argsDigest: 'd-call-4' })).toBe(
      'calls of shell may be decided only by ops-lead (approvals.groups); the decision names no approver',
    );
    expect(approvals.offer({ callId: 'call-4', decision: 'approve', argsDigest: 'd-call-4', approver: 'alice' })).toBe(
      'alice may not decide on calls of shell: only ops-lead may (approvals.groups)',
    );
    expect(approvals.offer({ callId: 'call-4', decision: 'deny', argsDigest: 'd-call-4', approver: 'ops-lead' })).toBeUndefined();
  });

  it('leave a tool no entry names to any approver', () => {
    const { approvals } = books({ signed: false });
    approvals.open(waiting('save_draft', 'call-5'));
    expect(approvals.offer({ callId: 'call-5', decision: 'approve', argsDigest: 'd-call-5', approver: 'anyone' })).toBeUndefined();
  });

  it('are validated in the config, naming the bad entry', () => {
    expect(parseConfig({ approvals: { groups: { send_message: ['alice', 'bob'] } } }, WHERE).approvals.groups).toEqual({
      send_message: ['alice', 'bob'],
    });
    expect(() => parseConfig({ approvals: { groups: { 'send message': ['alice'] } } }, WHERE)).toThrow(/approvals\.groups/);
    expect(() => parseConfig({ approvals: { groups: { send_message: ['al ice'] } } }, WHERE)).toThrow(/approvals\.groups\.send_message/);
  });
});

describe('a worker that takes unsigned decisions on a shared server', () => {
  const tools = [
    { name: 'send_message', effect: 'irreversible_write' as const },
    { name: 'save_draft', effect: 'reversible_write' as const },
  ];
  const config = (address: string, keys?: string) =>
    parseConfig({ temporal: { address }, approvals: keys ? { publicKeysEnv: keys } : {} }, { ...WHERE, env: keys ? { [keys]: '' } : {} });

  it('says so at start, naming the tools that wait for a person and the server', () => {
    expect(unsignedApprovalsWarning(config('temporal.internal:7233'), tools)).toBe(
      "approvals: send_message wait for a person's approval, and no approver keys are configured (approvals.publicKeysEnv): on temporal.internal:7233, anyone who can send a signal decides, under any name they give; configure approver keys (docs/approvals.md)",
    );
  });

  it('says nothing on this machine, with approver keys, or when no tool waits for a person', () => {
    expect(unsignedApprovalsWarning(config('127.0.0.1:7233'), tools)).toBeUndefined();
    expect(unsignedApprovalsWarning(config('localhost:7233'), tools)).toBeUndefined();
    expect(unsignedApprovalsWarning(config('127.0.0.2:7233'), tools)).toBeUndefined();
    expect(unsignedApprovalsWarning(config('temporal.internal:7233', 'KEYS'), tools)).toBeUndefined();
    expect(unsignedApprovalsWarning(config('temporal.internal:7233'), [tools[1]])).toBeUndefined();
    expect(unsignedApprovalsWarning(config('temporal.internal:7233'), [{ ...tools[1], needsApproval: false }])).toBeUndefined();
  });

  it('names tools that wait for a person by their own needsApproval, whatever their effect', () => {
    const asking = [
      { name: 'read_records', effect: 'read' as const, needsApproval: true },
      { name: 'bulk_update', effect: 'reversible_write' as const, needsApproval: (args: { rows: number }) => args.rows > 100 },
      { name: 'save_draft', effect: 'reversible_write' as const },
    ];
    expect(unsignedApprovalsWarning(config('temporal.internal:7233'), asking)).toMatch(
      /^approvals: read_records, bulk_update wait for a person's approval/,
    );
  });
});
