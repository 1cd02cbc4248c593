// Approval rules and grants without Temporal: rules compile or stop the worker naming the rule and
// the field; an approving condition is read strictly, so arguments varied to slip past it are asked
// for; caps and grants are counted in the real SQLite store, also by two stores racing on one file.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PolicyInput } from '../../common/activity-types';
import { canonicalJson } from '../../common/canonical-json';
import type { TurnState } from '../../common/contract/turn';
import { bytesBase64, publicKeyOf, signDecisionFields } from '../../common/signed-decision';
import { ApprovalBook } from '../../workflows/decisions/approval';
import { DecisionRecord } from '../../workflows/decisions/desk';
import { startingState } from '../../workflows/turn/turn-run';
import { TollgateMetrics } from '../../worker/telemetry/metrics';
import { ConfigError } from '../../config/config-error';
import { parseConfig } from '../../config/load-config';
import { compileRules, workerRules, type ApprovalRule } from '../../policies/approval-rules';
import { createDecideByPolicy, createRecordGrant, grantId } from '../../policies/decide-by-policy';
import { openPostgresPolicyStore, openSqlitePolicyStore, type PolicyStore } from '../../policies/policy-store';
import { eventLoopWorkProbe, expectLive } from '../helpers/event-loop-work-probe';
import { postgresUrl } from '../helpers/postgres';
import { dagLevels, deepObject, nestedArrays } from '../helpers/schema-probes';
import { testConfig } from '../helpers/test-config';
import { createActivities } from '../../activities';
import { openSqliteStore } from '../../intents/sqlite-store';

/** Messages to the company's own domain, lower-case ASCII only, with the fields a send has. */
const ROUTINE_SEND: ApprovalRule = {
  name: 'routine-sends',
  tool: 'send_message',
  when: {
    properties: {
      to: { pattern: '^[a-z0-9._-]+@example\\.com$' },
      subject: { maxLength: 200 },
      body: { maxLength: 5000 },
    },
    required: ['to'],
  },
  decision: 'approve',
};

const WHERE = { source: 'test.yaml', baseDir: '/tmp', env: {} };
const send = (to: unknown, extra: Record<string, unknown> = {}) => ({ to, subject: 'Hello', body: 'Text', ...extra });

const stores: PolicyStore[] = [];
function store(file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-policies-')), 'policies.db')): PolicyStore {
  const opened = openSqlitePolicyStore(file);
  stores.push(opened);
  return opened;
}
afterEach(async () => {
  for (const opened of stores.splice(0)) await opened.close();
});

let calls = 0;
function input(tool: string, args: unknown, more: Partial<PolicyInput> = {}): PolicyInput {
  calls++;
  return {
    workflowId: 'turn-1',
    taskId: 'task-1',
    callId: `call-${calls}`,
    tool,
    args,
    argsDigest: `digest-${JSON.stringify(args)}`,
    at: Date.parse('2026-06-01T12:00:00Z'),
    deniedDigests: [],
    ...more,
  };
}

describe('approval rules: what compiles', () => {
  it('compiles the rules of a config file and keeps their order', () => {
    const rules = [ROUTINE_SEND, { name: 'no-shell', tool: 'shell', decision: 'deny', reason: 'never' }];
    const config = parseConfig({ approvals: { rules } }, WHERE);
    expect(compileRules(config.approvals.rules).map((rule) => rule.name)).toEqual(['routine-sends', 'no-shell']);
  });

  it.each([
    [{ ...ROUTINE_SEND, when: { propertes: {} } }, /approvals\.rules\[0\] \("routine-sends"\)\.when: .*propertes/],
    [
      { ...ROUTINE_SEND, when: { properties: { to: { pattern: '(a)\\1' } } } },
      /rules\[0\] \("routine-sends"\)\.when: the pattern .*cannot be matched in linear time/,
    ],
    [{ ...ROUTINE_SEND, when: { properties: { to: { type: 'text' } } } }, /rules\[0\] \("routine-sends"\)\.when: .*type/],
    [{ name: 'stop', tool: 'shell', decision: 'deny' }, /rules\[0\] \("stop"\)\.reason: a deny rule needs the reason/],
    [{ name: 'x', tool: 'shell', decision: 'ask', limits: { perTask: 1 } }, /rules\[0\] \("x"\)\.limits: only an approve rule has limits/],
    [{ name: 'bad name!', tool: 'shell', decision: 'ask' }, /rules\[0\] \("bad name!"\)\.name: expected a rule name/],
    [{ ...ROUTINE_SEND, limits: { amount: { argument: 'cents' } } }, /limits\.amount: an amount cap needs perTask or perWindow/],
  ])('an invalid rule stops the worker, naming the rule and the field (%#)', (rule, message) => {
    expect(() => compileRules([rule])).toThrow(ConfigError);
    expect(() => compileRules([rule])).toThrow(message);
  });

  it('stops the worker at start: its activities are not built with a rule that does not compile, from the config or from code', () => {
    const lookbehind = { ...ROUTINE_SEND, when: { properties: { to: { pattern: '(?<=x)y' } } } };
    const store = openSqliteStore(':memory:');
    expect(() => createActivities({ config: testConfig({ approvals: { rules: [lookbehind] } }), store })).toThrow(
      /approvals\.rules\[0\] \("routine-sends"\)\.when: the pattern "\(\?<=x\)y" uses a lookbehind/,
    );
    expect(() => createActivities({ config: testConfig(), store, approvalRules: [{ ...ROUTINE_SEND, when: { propertes: {} } }] })).toThrow(
      /createWorker approvalRules\[0\] \("routine-sends"\)\.when: .*propertes/,
    );
  });

  it('refuses two rules of one name, also one in code and one in the config', () => {
    expect(() => compileRules([ROUTINE_SEND, ROUTINE_SEND])).toThrow(
      /rules\[1\] \("routine-sends"\)\.name: a second rule named routine-sends/,
    );
    expect(() => workerRules([ROUTINE_SEND], [ROUTINE_SEND])).toThrow(/two rules are named "routine-sends"/);
  });

  it('a config with an invalid rule shape is refused when it is read', () => {
    const rules = [{ name: 'x', tool: 'shell', decision: 'maybe' }];
    expect(() => parseConfig({ approvals: { rules } }, WHERE)).toThrow(/approvals\.rules\.0\.decision/);
  });
});

describe('approval rules: what matches', () => {
  const [routine] = compileRules([ROUTINE_SEND]);

  it('approves the routine call it describes', () => {
    expect(routine.matches('send_message', send('bob@example.com'))).toBe(true);
    expect(routine.matches('save_draft', send('bob@example.com'))).toBe(false);
  });

  it.each([
    ['another domain', send('bob@example.org')],
    ['upper case', send('Bob@EXAMPLE.com')],
    ['a Cyrillic а in the domain', send('bob@exаmple.com')],
    ['a full-width @', send('bob＠example.com')],
    ['a second address after a newline', send('bob@example.com\nmallory@evil.com')],
    ['a second address after a comma', send('mallory@evil.com,bob@example.com')],
    ['an extra field', send('bob@example.com', { cc: 'mallory@evil.com' })],
    ['an object instead of a string', send({ address: 'bob@example.com', to: 'mallory@evil.com' })],
    ['an array of addresses', send(['bob@example.com', 'mallory@evil.com'])],
    ['a number', send(42)],
    ['no recipient', { subject: 'Hello', body: 'Text' }],
  ])('asks when a hostile model varies the arguments: %s', (_what, args) => {
    expect(routine.matches('send_message', args)).toBe(false);
  });

  it('reads a deny rule as written: a looser deny denies more, never less', () => {
    const [deny] = compileRules([
      { name: 'no-evil', tool: 'send_message', when: { properties: { to: { pattern: 'evil' } } }, decision: 'deny', reason: 'no' },
    ]);
    expect(deny.matches('send_message', send('mallory@evil.com'))).toBe(true);
    // Not strict: an extra field does not let a message to evil.com past the deny.
    expect(deny.matches('send_message', send('mallory@evil.com', { cc: 'x' }))).toBe(true);
  });

  it('matches tool-name patterns, MCP tools included', () => {
    const [rule] = compileRules([{ name: 'notes', tool: 'notes__*', decision: 'approve' }]);
    expect(rule.matches('notes__record_note', {})).toBe(true);
    expect(rule.matches('files__write', {})).toBe(false);
  });
});

describe('decideByPolicy on the SQLite store', () => {
  it('first match wins: deny with its reason, ask, approve', async () => {
    const rules = compileRules([
      {
        name: 'no-evil',
        tool: 'send_message',
        when: { properties: { to: { pattern: 'evil' } } },
        decision: 'deny',
        reason: 'not to evil.com',
      },
      { name: 'ask-board', tool: 'send_message', when: { properties: { to: { const: 'board@example.com' } } }, decision: 'ask' },
      ROUTINE_SEND,
    ]);
    const decide = createDecideByPolicy({ rules, store: () => store() });
    expect(await decide(input('send_message', send('mallory@evil.com')))).toMatchObject({
      decision: 'deny',
      by: 'rule:no-evil',
      reason: 'not to evil.com',
    });
    expect(await decide(input('send_message', send('board@example.com')))).toMatchObject({ decision: 'ask', rule: 'ask-board' });
    const approved = await decide(input('send_message', send('bob@example.com')));
    expect(approved).toEqual({
      decision: 'approve',
      via: 'rule',
      by: 'rule:routine-sends',
      argsDigest: 'digest-{"to":"bob@example.com","subject":"Hello","body":"Text"}',
    });
    expect(await decide(input('send_message', send('bob@example.org')))).toEqual({ decision: 'ask' });
  });

  it('never approves again arguments a person denied in the turn', async () => {
    const decide = createDecideByPolicy({ rules: compileRules([ROUTINE_SEND]), store: () => store() });
    const args = send('bob@example.com');
    const verdict = await decide(input('send_message', args, { deniedDigests: [`digest-${JSON.stringify(args)}`] }));
    expect(verdict).toMatchObject({ decision: 'ask', note: expect.stringMatching(/a person denied these arguments/) });
    // A deny rule still denies them: what a person denied is never approved, and may be denied.
    const strict = createDecideByPolicy({
      rules: compileRules([
        {
          name: 'no-bob',
          tool: 'send_message',
          when: { properties: { to: { const: 'bob@example.com' } } },
          decision: 'deny',
          reason: 'no',
        },
      ]),
      store: () => store(),
    });
    expect(await strict(input('send_message', args, { deniedDigests: [`digest-${JSON.stringify(args)}`] }))).toMatchObject({
      decision: 'deny',
      by: 'rule:no-bob',
    });
  });

  it('caps per task: past the cap the call is asked for, with why; another task has its own count', async () => {
    const opened = store();
    const decide = createDecideByPolicy({ rules: compileRules([{ ...ROUTINE_SEND, limits: { perTask: 2 } }]), store: () => opened });
    const args = send('bob@example.com');
    expect((await decide(input('send_message', args))).decision).toBe('approve');
    expect((await decide(input('send_message', args))).decision).toBe('approve');
    expect(await decide(input('send_message', args))).toMatchObject({
      decision: 'ask',
      note: 'rule routine-sends approved its 2 calls for task task-1',
    });
    expect((await decide(input('send_message', args, { taskId: 'task-2' }))).decision).toBe('approve');
  });

  it('a call asked again (a retried activity) is the same use, not a second one', async () => {
    const opened = store();
    const decide = createDecideByPolicy({ rules: compileRules([{ ...ROUTINE_SEND, limits: { perTask: 1 } }]), store: () => opened });
    const first = input('send_message', send('bob@example.com'));
    expect((await decide(first)).decision).toBe('approve');
    expect((await decide(first)).decision).toBe('approve');
    expect((await decide(input('send_message', send('bob@example.com')))).decision).toBe('ask');
  });

  it('caps per time window, by the turn clock', async () => {
    const opened = store();
    const decide = createDecideByPolicy({
      rules: compileRules([{ ...ROUTINE_SEND, limits: { perWindow: { calls: 1, window: '1h' } } }]),
      store: () => opened,
    });
    const at = Date.parse('2026-06-01T12:00:00Z');
    expect((await decide(input('send_message', send('bob@example.com'), { at }))).decision).toBe('approve');
    expect((await decide(input('send_message', send('bob@example.com'), { at: at + 59 * 60_000, taskId: 'other' }))).decision).toBe('ask');
    expect((await decide(input('send_message', send('bob@example.com'), { at: at + 61 * 60_000 }))).decision).toBe('approve');
  });

  it('caps a total amount; a call without a countable amount is asked for', async () => {
    const opened = store();
    const pay: ApprovalRule = {
      name: 'small-payments',
      tool: 'pay_invoice',
      when: { properties: { invoice: { type: 'string' }, cents: { type: 'integer', maximum: 5000 } } },
      decision: 'approve',
      limits: { amount: { argument: 'cents', perTask: 8000 } },
    };
    const decide = createDecideByPolicy({ rules: compileRules([pay]), store: () => opened });
    expect((await decide(input('pay_invoice', { invoice: 'A', cents: 5000 }))).decision).toBe('approve');
    expect(await decide(input('pay_invoice', { invoice: 'B', cents: 3001 }))).toMatchObject({
      decision: 'ask',
      note: 'rule small-payments approves at most 8000 per task; 5000 approved, this call asks 3001',
    });
    expect((await decide(input('pay_invoice', { invoice: 'C', cents: 3000 }))).decision).toBe('approve');
  });

  it('two workers racing for the last use of a cap on one SQLite file: exactly one approves', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-policies-')), 'policies.db');
    const [one, two] = [store(file), store(file)];
    const rules = compileRules([{ ...ROUTINE_SEND, limits: { perTask: 5 } }]);
    const deciders = [createDecideByPolicy({ rules, store: () => one }), createDecideByPolicy({ rules, store: () => two })];
    const verdicts = await Promise.all(
      Array.from({ length: 12 }, (_, index) => deciders[index % 2](input('send_message', send('bob@example.com')))),
    );
    expect(verdicts.filter((verdict) => verdict.decision === 'approve')).toHaveLength(5);
  });
});

describe('grants on the SQLite store', () => {
  const at = Date.parse('2026-06-01T12:00:00Z');
  const give = async (opened: PolicyStore, more: Partial<Parameters<ReturnType<typeof createRecordGrant>>[0]> = {}) => {
    const recorded = await createRecordGrant({ store: () => opened })({
      workflowId: 'turn-1',
      taskId: 'task-1',
      callId: 'call-0',
      round: 1,
      tool: 'send_message',
      grant: { forMs: 60_000, when: { properties: { to: { pattern: '@example\\.com$' }, subject: {}, body: {} } } },
      grantedBy: 'alice',
      at,
      ...more,
    });
    if (!recorded.recorded) throw new Error(recorded.why);
    return recorded.grant;
  };

  it('approves matching calls of its task until it expires, and names itself', async () => {
    const opened = store();
    const grant = await give(opened);
    expect(grant.id).toBe(grantId('turn-1', 'call-0', 1));
    const decide = createDecideByPolicy({ rules: [], store: () => opened });
    expect(await decide(input('send_message', send('bob@example.com'), { at: at + 1 }))).toMatchObject({
      decision: 'approve',
      by: `grant:${grant.id}`,
      via: 'grant',
    });
    expect((await decide(input('send_message', send('bob@example.org'), { at: at + 2 }))).decision).toBe('ask');
    expect((await decide(input('send_message', send('bob@example.com'), { at: at + 3, taskId: 'task-2' }))).decision).toBe('ask');
    expect((await decide(input('save_draft', send('bob@example.com'), { at: at + 4 }))).decision).toBe('ask');
    expect((await decide(input('send_message', send('bob@example.com'), { at: at + 60_000 }))).decision).toBe('ask');
  });

  it('is recorded once however often its approval is recorded again', async () => {
    const opened = store();
    await give(opened);
    await give(opened);
    expect(await opened.listGrants({ at })).toHaveLength(1);
  });

  it('a revoked grant approves nothing more; a capped one stops at its cap; list shows both', async () => {
    const opened = store();
    const revoked = await give(opened, { callId: 'call-a' });
    const capped = await give(opened, { callId: 'call-b', tool: 'pay_invoice', grant: { forMs: 60_000, maxCalls: 1 } });
    const decide = createDecideByPolicy({ rules: [], store: () => opened });
    expect(await decide(input('send_message', send('bob@example.com'), { at: at + 1 }))).toMatchObject({ by: `grant:${revoked.id}` });
    expect((await opened.revokeGrant(revoked.id, 'carol', at + 2))?.revokedBy).toBe('carol');
    expect((await decide(input('send_message', send('bob@example.com'), { at: at + 3 }))).decision).toBe('ask');
    expect((await decide(input('pay_invoice', { invoice: 'A', cents: 1 }, { at: at + 4 }))).decision).toBe('approve');
    expect((await decide(input('pay_invoice', { invoice: 'B', cents: 1 }, { at: at + 5 }))).decision).toBe('ask');
    expect(await opened.listGrants({ at: at + 6 })).toEqual([]);
    const all = await opened.listGrants({ at: at + 6, all: true });
    expect(all.map((grant) => [grant.id, grant.uses, grant.revokedBy])).toEqual(
      expect.arrayContaining([
        [revoked.id, 1, 'carol'],
        [capped.id, 1, undefined],
      ]),
    );
  });

  it('a grant whose condition does not compile, or scoped to a conversation outside one, is not recorded, saying why', async () => {
    const recordGrant = createRecordGrant({ store: () => store() });
    const base = { workflowId: 'w', taskId: 't', callId: 'c', round: 1, tool: 'send_message', grantedBy: 'alice', at };
    expect(await recordGrant({ ...base, grant: { forMs: 1000, when: { properties: { to: { pattern: '(?=x)' } } } } })).toMatchObject({
      recorded: false,
      why: expect.stringMatching(/grant\.when: the pattern/),
    });
    expect(await recordGrant({ ...base, grant: { forMs: 1000, scope: 'conversation' } })).toMatchObject({
      recorded: false,
      why: expect.stringMatching(/not one of a conversation/),
    });
    expect(await recordGrant({ ...base, grant: { forMs: 0 } })).toMatchObject({ recorded: false, why: expect.stringMatching(/forMs/) });
  });
});

describe('a grant signed with its approval', () => {
  const NOW = Date.parse('2026-06-01T12:00:00.000Z');
  const key = Uint8Array.from({ length: 32 }, (_, index) => index + 7);
  const grant = { forMs: 3_600_000, when: { properties: { to: { pattern: '@example\\.com$' }, subject: {}, body: {} } }, maxCalls: 3 };

  function book() {
    const state: TurnState = { ...startingState('task-signed-grant'), phase: 'tools' };
    const record = new DecisionRecord(state, { now: () => NOW, workflowId: () => 'turn-grant', publish: () => undefined });
    record.signing = { publicKeys: { alice: bytesBase64(publicKeyOf(key)) }, maxAgeMs: 3_600_000 };
    const approvals = new ApprovalBook(record, () => Promise.reject(new Error('no edits here')));
    approvals.open({
      callId: 'call-1',
      tool: 'send_message',
      args: {},
      argsDigest: 'd-1',
      requestedAt: new Date(NOW).toISOString(),
      expiresAt: new Date(NOW + 60_000).toISOString(),
    });
    return { state, approvals };
  }

  function signed(signedGrant: unknown) {
    const signedAt = new Date(NOW - 1_000).toISOString();
    const fields = {
      callId: 'call-1',
      decision: 'approve' as const,
      argsDigest: 'd-1',
      approver: 'alice',
      signedAt,
      workflowId: 'turn-grant',
    };
    return { ...fields, keyId: 'alice', signature: signDecisionFields({ ...fields, grant: canonicalJson(signedGrant) }, key) };
  }

  it('is taken with the signature that covers it, kept as evidence', () => {
    const { state, approvals } = book();
    const decision = { ...signed(grant), grant };
    expect(approvals.offer(decision)).toBeUndefined();
    expect(state.decisions.at(-1)).toMatchObject({ approver: 'alice', grant, signature: decision.signature });
  });

  it('changed after signing (a longer time, no cap), or added to a signature made without it, does not count', () => {
    const { state, approvals } = book();
    expect(approvals.offer({ ...signed(grant), grant: { ...grant, forMs: 30 * 24 * 3_600_000, maxCalls: undefined } })).toMatch(
      /signature does not verify with key "alice" over .* with the grant of this turn/,
    );
    const withoutGrant = signed(grant);
    const fields = {
      callId: 'call-1',
      decision: 'approve' as const,
      argsDigest: 'd-1',
      approver: 'alice',
      signedAt: withoutGrant.signedAt,
      workflowId: 'turn-grant',
    };
    const plain = { ...fields, keyId: 'alice', signature: signDecisionFields(fields, key) };
    expect(approvals.offer({ ...plain, grant })).toMatch(/signature does not verify/);
    expect(state.decisions).toEqual([]);
  });
});

describe('the policies on PostgreSQL', () => {
  const unique = `${Date.now()}-${Math.random().toString(36).slice(2)}`;

  it('two workers racing for the last uses of a cap: exactly the cap approves; a revoked grant approves nothing more', async () => {
    const [one, two] = [openPostgresPolicyStore(postgresUrl()), openPostgresPolicyStore(postgresUrl())];
    try {
      const rules = compileRules([{ ...ROUTINE_SEND, name: `routine-${unique}`, limits: { perTask: 5 } }]);
      const deciders = [createDecideByPolicy({ rules, store: () => one }), createDecideByPolicy({ rules, store: () => two })];
      const verdicts = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          deciders[index % 2](input('send_message', send('bob@example.com'), { taskId: `task-${unique}`, workflowId: `turn-${unique}` })),
        ),
      );
      expect(verdicts.filter((verdict) => verdict.decision === 'approve')).toHaveLength(5);

      const at = Date.now();
      const recorded = await createRecordGrant({ store: () => one })({
        workflowId: `turn-${unique}`,
        taskId: `grant-${unique}`,
        callId: 'call-0',
        round: 1,
        tool: 'pay_invoice',
        grant: { forMs: 60_000 },
        grantedBy: 'alice',
        at,
      });
      if (!recorded.recorded) throw new Error(recorded.why);
      const decide = createDecideByPolicy({ rules: [], store: () => two });
      const pay = (invoice: string, when: number) =>
        input('pay_invoice', { invoice }, { taskId: `grant-${unique}`, workflowId: `turn-${unique}`, at: when });
      expect(await decide(pay('A', at + 1))).toMatchObject({ decision: 'approve', by: `grant:${recorded.grant.id}` });
      await one.revokeGrant(recorded.grant.id, 'carol', at + 2);
      expect((await decide(pay('B', at + 3))).decision).toBe('ask');
      const [listed] = (await two.listGrants({ at, all: true })).filter((grant) => grant.id === recorded.grant.id);
      expect(listed).toMatchObject({ uses: 1, revokedBy: 'carol' });
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});

describe('the metric of decisions', () => {
  it('counts decisions by a person, a rule and a grant apart', async () => {
    const metrics = new TollgateMetrics();
    const finished = (decision: 'approve' | 'deny', via: 'person' | 'rule' | 'grant') =>
      metrics.toolCallFinished({
        tool: 'send_message',
        effect: 'irreversible_write',
        status: 'success',
        durationMs: 1,
        approval: { decision, via },
      });
    finished('approve', 'rule');
    finished('approve', 'rule');
    finished('approve', 'grant');
    finished('deny', 'rule');
    finished('deny', 'person');
    const text = await metrics.registry.getSingleMetricAsString('tollgate_approval_decisions_total');
    const samples = text.split('\n').filter((line) => line.startsWith('tollgate_approval_decisions_total{'));
    expect(samples.map((line) => line.replace(/tool="[^"]*",/, ''))).toEqual([
      'tollgate_approval_decisions_total{decision="approve",by="rule"} 2',
      'tollgate_approval_decisions_total{decision="approve",by="grant"} 1',
      'tollgate_approval_decisions_total{decision="deny",by="rule"} 1',
      'tollgate_approval_decisions_total{decision="deny",by="person"} 1',
    ]);
  });
});

describe('rules and grants whose condition makes a validator work without end (the DAG probe)', () => {
  /** An approve rule on sends whose condition is the probe, or its recursive fold, under `to`. */
  const dagRule = (when: Record<string, unknown>): ApprovalRule => ({ name: 'dag', tool: 'send_message', when, decision: 'approve' });
  const dagCondition = (depth: number) => ({ properties: { to: { $ref: '#/$defs/L0' } }, $defs: dagLevels(depth) });
  const treeCondition = () => ({
    properties: { to: { type: 'string' }, tree: { $ref: '#/$defs/tree' } },
    $defs: { tree: { type: 'array', items: { allOf: [{ $ref: '#/$defs/tree' }, { $ref: '#/$defs/tree' }] } } },
  });
  // ajv's first compile in a process loads its meta-schema (a cost of the worker's start, whatever the condition).
  beforeAll(() => void compileRules([dagRule({ properties: { to: { type: 'string' } } })]));

  it('refuses a rule whose condition is the probe at every depth from 20 to 40, naming the rule and the bound, without stalling', () => {
    const probe = eventLoopWorkProbe();
    for (let depth = 20; depth <= 40; depth++) {
      expect(() => compileRules([dagRule(dagCondition(depth))])).toThrow(
        'approvals.rules[0] ("dag").when: the condition is over its work budget: applying it once follows its references to more than 100000 nodes (maxExpandedWork)',
      );
    }
    expectLive(probe.stop());
    // Nested 5,000 levels deep: refused by its depth, not by a stack overflow.
    expect(() => compileRules([dagRule(deepObject(5_000, {}) as Record<string, unknown>)])).toThrow(
      'approvals.rules[0] ("dag").when: the condition is over its work budget: it nests deeper than 64 levels (maxDepth)',
    );
  });

  it('asks a person when a rule cannot evaluate a call within the budget (a tree 40 deep), and decides the next call by the rule', async () => {
    const opened = store();
    const decide = createDecideByPolicy({ rules: compileRules([dagRule(treeCondition())]), store: () => opened });
    const probe = eventLoopWorkProbe();
    const verdicts = [];
    for (let depth = 20; depth <= 40; depth += 5) {
      verdicts.push(await decide(input('send_message', { to: 'bob@example.com', tree: nestedArrays(depth) })));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, 60));
    expectLive(probe.stop());
    for (const verdict of verdicts)
      expect(verdict).toEqual({
        decision: 'ask',
        note: 'rule dag cannot be evaluated for these arguments (checking it would visit more than 250000 schema nodes (maxCheckWork)); a person decides',
      });
    expect(await decide(input('send_message', { to: 'bob@example.com', tree: nestedArrays(3) }))).toMatchObject({
      decision: 'approve',
      by: 'rule:dag',
    });
  });

  it('asks a person, never denies or approves by guess, when a deny rule cannot be evaluated', async () => {
    const deny: ApprovalRule = { name: 'deny-trees', tool: 'send_message', when: treeCondition(), decision: 'deny', reason: 'no trees' };
    const decide = createDecideByPolicy({ rules: compileRules([deny, ROUTINE_SEND]), store: () => store() });
    expect(await decide(input('send_message', { to: 'bob@example.com', tree: nestedArrays(40) }))).toMatchObject({ decision: 'ask' });
  });

  it('does not record a grant whose condition is the probe (30 levels, under 2,000 characters), naming the bound', async () => {
    const recordGrant = createRecordGrant({ store: () => store() });
    const when = dagCondition(30);
    expect(JSON.stringify(when).length).toBeLessThan(2_000);
    const probe = eventLoopWorkProbe();
    const recorded = await recordGrant({
      workflowId: 'turn-1',
      taskId: 'task-1',
      callId: 'call-0',
      round: 1,
      tool: 'send_message',
      grant: { forMs: 60_000, when },
      grantedBy: 'alice',
      at: Date.parse('2026-06-01T12:00:00Z'),
    });
    expectLive(probe.stop());
    expect(recorded).toEqual({
      recorded: false,
      why: 'grant.when: the condition is over its work budget: applying it once follows its references to more than 100000 nodes (maxExpandedWork)',
    });
  });

  it('leaves a grant out, saying why, when its condition cannot evaluate a call within the budget; it still approves the next call it can', async () => {
    const opened = store();
    const at = Date.parse('2026-06-01T12:00:00Z');
    const recorded = await createRecordGrant({ store: () => opened })({
      workflowId: 'turn-1',
      taskId: 'task-1',
      callId: 'call-0',
      round: 1,
      tool: 'send_message',
      grant: { forMs: 60_000, when: treeCondition() },
      grantedBy: 'alice',
      at,
    });
    if (!recorded.recorded) throw new Error(recorded.why);
    const decide = createDecideByPolicy({ rules: [], store: () => opened });
    const probe = eventLoopWorkProbe();
    const deep = await decide(input('send_message', { to: 'bob@example.com', tree: nestedArrays(40) }, { at: at + 1 }));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expectLive(probe.stop());
    expect(deep).toEqual({
      decision: 'ask',
      note: `grant ${recorded.grant.id} cannot be evaluated for these arguments (checking it would visit more than 250000 schema nodes (maxCheckWork))`,
    });
    expect(await decide(input('send_message', { to: 'bob@example.com', tree: [[]] }, { at: at + 2 }))).toMatchObject({
      decision: 'approve',
      by: `grant:${recorded.grant.id}`,
    });
  });
});
