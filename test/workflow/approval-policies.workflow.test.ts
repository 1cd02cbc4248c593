// Approval rules and grants in real turns on the time-skipping server: each automatic decision is
// recorded like a person's (decided by rule:<name> or grant:<id>, with the digest), every handler's
// executions are counted, and replay of the recorded history never evaluates a rule again.
import { randomUUID } from 'node:crypto';
import { type WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createActivities } from '../../activities';
import type { AgentTurnResult, TurnState } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { ApprovalRule } from '../../policies/approval-rules';
import { openSqlitePolicyStore } from '../../policies/policy-store';
import { defineTool } from '../../tools/define-tool';
import { createWorker } from '../../worker/create-worker';
import { closeConversationSignal, decideUpdate, resolveUpdate, sendUpdate, stateQuery } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

/** A send whose schema is loose (unknown fields are dropped before the handler): the rule still sees what the model sent. */
function tools() {
  const sent: Array<{ to: string }> = [];
  const paid: string[] = [];
  const send = defineTool({
    name: 'send_message',
    description: 'Sends a message.',
    input: z.object({ to: z.unknown(), subject: z.string(), body: z.string() }),
    effect: 'irreversible_write',
    handler: ({ to }) => {
      sent.push({ to: String(to) });
      return { sent: true };
    },
  });
  const pay = defineTool({
    name: 'pay_invoice',
    description: 'Pays an invoice.',
    input: z.strictObject({ invoice: z.string() }),
    effect: 'irreversible_write',
    handler: ({ invoice }) => {
      paid.push(invoice);
      return { paid: invoice };
    },
  });
  return { sent, paid, list: [send, pay] };
}

const ROUTINE: ApprovalRule = {
  name: 'routine-sends',
  tool: 'send_message',
  when: { properties: { to: { pattern: '^[a-z0-9._-]+@example\\.com$' }, subject: {}, body: {} } },
  decision: 'approve',
};
const NO_EVIL: ApprovalRule = {
  name: 'no-evil',
  tool: 'send_message',
  when: { properties: { to: { pattern: 'evil' } } },
  decision: 'deny',
  reason: 'we never write to evil.com',
};

const sendTo = (to: unknown, extra: Record<string, unknown> = {}) => ({
  tool: 'send_message',
  args: { to, subject: 'Hi', body: 'Text', ...extra },
});
const pay = (invoice: string) => ({ tool: 'pay_invoice', args: { invoice } });

function configWith(rules: ApprovalRule[], sqliteFile?: string): TollgateConfig {
  const base = testConfig({ approvals: { rules } });
  return sqliteFile ? { ...base, store: { ...base.store, sqliteFile } } : base;
}

/** Waits for the call that waits now (after `decided` decisions), and decides on it as a person through the `decide` update. */
async function decide(
  handle: WorkflowHandle,
  decided: number,
  verdict: 'approve' | 'deny',
  extra: Record<string, unknown> = {},
): Promise<TurnState> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0 && current.decisions.length === decided);
  const [pending] = state.pendingApprovals;
  await handle.executeUpdate(decideUpdate, {
    args: [{ callId: pending.callId, decision: verdict, argsDigest: pending.argsDigest, approver: 'alice', ...extra }],
  });
  return state;
}

/** Polls until `ready` holds for what `probe` returns. */
async function until<T>(probe: () => Promise<T>, ready: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ready(value)) return value;
    if (Date.now() > deadline) throw new Error(`never ready: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const byWhom = (result: AgentTurnResult) =>
  result.toolCalls.map((event) => event.approval && `${event.approval.decision} ${event.approval.by}`);

describe('approval rules in a turn', () => {
  it('a send to an allowed domain is approved by rule and sent once; another domain waits; a deny rule denies with its reason', async () => {
    const { sent, list } = tools();
    let waiting: TurnState | undefined;
    const { result, state, history, modelInputs } = await runTurn({
      tools: list,
      config: configWith([NO_EVIL, ROUTINE]),
      input: {
        prompt: 'x',
        model: scripted([
          { toolCalls: [sendTo('bob@example.com')] },
          { toolCalls: [sendTo('mallory@evil.com')] },
          { toolCalls: [sendTo('eve@other.org')] },
          { text: 'done' },
        ]),
      },
      interact: async (handle) => {
        waiting = await decide(handle, 2, 'deny');
      },
    });
    expect(sent).toEqual([{ to: 'bob@example.com' }]);
    expect(result.status).toBe('completed');
    expect(byWhom(result)).toEqual(['approve rule:routine-sends', 'deny rule:no-evil', 'deny alice']);
    expect(result.toolCalls.map((event) => [event.status, event.executions])).toEqual([
      ['success', 1],
      ['denied', 0],
      ['denied', 0],
    ]);
    // Only the other domain ever waited; the rules' decisions are on the record like a person's, with the digest decided on.
    expect(waiting!.pendingApprovals.map((pending) => pending.args)).toEqual([{ to: 'eve@other.org', subject: 'Hi', body: 'Text' }]);
    expect(state.decisions.slice(0, 2)).toEqual([
      {
        callId: 'call-0-0',
        decision: 'approve',
        approver: 'rule:routine-sends',
        via: 'rule',
        argsDigest: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
      {
        callId: 'call-1-0',
        decision: 'deny',
        approver: 'rule:no-evil',
        via: 'rule',
        argsDigest: expect.any(String),
        reason: 'we never write to evil.com',
      },
    ]);
    // The model is told which rule refused, and why.
    expect(JSON.stringify(modelInputs[2])).toContain('denied by rule:no-evil: we never write to evil.com');
    // Replay takes each verdict from the history, with no worker to ask.
    await expect(Worker.runReplayHistory({ workflowBundle: environment.workflowBundle }, history)).resolves.toBeUndefined();
  });

  it('a cap reached falls back to asking a person, saying why', async () => {
    const { sent, list } = tools();
    let waiting: TurnState | undefined;
    const { result } = await runTurn({
      tools: list,
      config: configWith([{ ...ROUTINE, limits: { perTask: 1 } }]),
      input: {
        prompt: 'x',
        model: scripted([{ toolCalls: [sendTo('bob@example.com')] }, { toolCalls: [sendTo('carol@example.com')] }, { text: 'done' }]),
      },
      interact: async (handle) => {
        waiting = await decide(handle, 1, 'approve');
      },
    });
    expect(waiting!.pendingApprovals[0].policyNote).toBe('rule routine-sends approved its 1 calls for task task-1');
    expect(byWhom(result)).toEqual(['approve rule:routine-sends', 'approve alice']);
    expect(sent).toEqual([{ to: 'bob@example.com' }, { to: 'carol@example.com' }]);
  });

  it('a hostile model varying the arguments to slip past the rule is asked each time: case, look-alike, extra field, nested object', async () => {
    const { sent, list } = tools();
    const variants = [
      sendTo('Bob@EXAMPLE.com'),
      sendTo('bob@exаmple.com'),
      sendTo('bob@example.com', { cc: 'mallory@evil.com' }),
      sendTo({ address: 'bob@example.com' }),
    ];
    const { result } = await runTurn({
      tools: list,
      config: configWith([ROUTINE]),
      input: { prompt: 'x', model: scripted([...variants.map((call) => ({ toolCalls: [call] })), { text: 'done' }]) },
      interact: async (handle) => {
        for (let index = 0; index < variants.length; index++) await decide(handle, index, 'deny');
      },
    });
    expect(byWhom(result)).toEqual(['deny alice', 'deny alice', 'deny alice', 'deny alice']);
    expect(sent).toEqual([]);
  });

  it('a write a rule approved that was cut off and found not applied goes back to a person, never to the rule again', async () => {
    const cuts = { left: 1, runs: 0 };
    const flaky = defineTool({
      name: 'send_message',
      description: 'Sends a message; its first connection is cut after the message went out, or not.',
      input: z.object({ to: z.unknown(), subject: z.string(), body: z.string() }),
      effect: 'irreversible_write',
      handler: () => {
        cuts.runs++;
        if (cuts.left-- > 0) throw Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });
        return { sent: true };
      },
    });
    let resolved: TurnState | undefined;
    let askedAgain: TurnState | undefined;
    const { result, state } = await runTurn({
      tools: [flaky],
      config: configWith([ROUTINE]),
      input: { prompt: 'x', model: scripted([{ toolCalls: [sendTo('bob@example.com')] }, { text: 'done' }]) },
      interact: async (handle) => {
        // Nobody can tell whether it went out: a person says it did not.
        resolved = await waitForState(handle, (current) => (current.pendingResolutions?.length ?? 0) > 0);
        const [pending] = resolved.pendingResolutions!;
        await handle.executeUpdate(resolveUpdate, {
          args: [{ callId: pending.callId, outcome: 'not_applied', argsDigest: pending.argsDigest, resolver: 'alice' }],
        });
        askedAgain = await decide(handle, 1, 'approve');
      },
    });
    expect(cuts.runs).toBe(2);
    expect(askedAgain!.pendingApprovals[0].policyNote).toBeUndefined();
    expect(state.decisions.map((decision) => decision.approver)).toEqual(['rule:routine-sends', 'alice']);
    expect(byWhom(result)).toEqual(['approve alice']);
    expect(result.toolCalls[0]).toMatchObject({ status: 'success', executions: 2 });
  });

  it("with the rules' store down, the call is asked for, saying why; nothing is approved unseen", async () => {
    const { sent, list } = tools();
    const broken = {
      useRule: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
      useGrant: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
      addGrant: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
      activeGrants: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
      listGrants: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
      revokeGrant: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
      close: async () => undefined,
    };
    const { env, workflowBundle } = environment;
    const base = configWith([ROUTINE]);
    const config = { ...base, temporal: { ...base.temporal, taskQueue: `store-down-${randomUUID()}` } };
    const store = openSqliteStore(config.store.sqliteFile);
    const worker = await createWorker({
      config,
      connection: env.nativeConnection,
      workflowBundle,
      activities: createActivities({ config, tools: list, store, policyStore: broken }),
    });
    let waiting: TurnState | undefined;
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue: config.temporal.taskQueue,
        args: [{ taskId: 'task-down', prompt: 'x', model: scripted([{ toolCalls: [sendTo('bob@example.com')] }, { text: 'done' }]) }],
      });
      waiting = await decide(handle, 0, 'approve');
      return (await handle.result()) as AgentTurnResult;
    });
    await store.close();
    expect(waiting!.pendingApprovals[0].policyNote).toMatch(
      /^the approval rules could not be evaluated, so a person decides: .*ECONNREFUSED/,
    );
    expect(byWhom(result)).toEqual(['approve alice']);
    expect(sent).toEqual([{ to: 'bob@example.com' }]);
  });

  it('a rule changed after a turn started applies to its next call; the call decided before keeps its recorded verdict', async () => {
    const { env, workflowBundle } = environment;
    const { sent, paid, list } = tools();
    const file = `${testConfig().store.sqliteFile}.rules-change`;
    const taskQueue = `rules-change-${randomUUID()}`;
    const store = openSqliteStore(file);
    const activitiesWith = (rules: ApprovalRule[]) => {
      const base = configWith(rules, file);
      return createActivities({ config: { ...base, temporal: { ...base.temporal, taskQueue } }, tools: list, store });
    };
    // The worker's rules as a redeploy with a new config changes them: routine sends approved, then asked for.
    const rules = {
      before: activitiesWith([ROUTINE]),
      after: activitiesWith([{ name: 'routine-sends', tool: 'send_message', decision: 'ask' }]),
    };
    let current: keyof typeof rules = 'before';
    const evaluated: string[] = [];
    const activities = {
      ...rules.before,
      decideByPolicy: (input: Parameters<typeof rules.before.decideByPolicy>[0]) => {
        evaluated.push(`${input.callId} ${current}`);
        return rules[current].decideByPolicy(input);
      },
    };
    const config = configWith([], file);
    const worker = await createWorker({
      config: { ...config, temporal: { ...config.temporal, taskQueue } },
      connection: env.nativeConnection,
      workflowBundle,
      activities,
    });
    const { result, history } = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentTurn', {
        workflowId: `turn-${randomUUID()}`,
        taskQueue,
        args: [
          {
            taskId: 'task-rules',
            prompt: 'x',
            model: scripted([
              { toolCalls: [sendTo('bob@example.com')] },
              { toolCalls: [pay('INV-1')] },
              { toolCalls: [sendTo('carol@example.com')] },
              { text: 'done' },
            ]),
          },
        ],
      });
      await waitForState(handle, (state) => state.pendingApprovals.some((pending) => pending.tool === 'pay_invoice'));
      current = 'after';
      await decide(handle, 1, 'approve');
      await decide(handle, 2, 'approve');
      return { result: (await handle.result()) as AgentTurnResult, history: await handle.fetchHistory() };
    });
    await store.close();
    expect(evaluated).toEqual(['call-0-0 before', 'call-1-0 before', 'call-2-0 after']);
    expect(byWhom(result)).toEqual(['approve rule:routine-sends', 'approve alice', 'approve alice']);
    expect(sent).toHaveLength(2);
    expect(paid).toEqual(['INV-1']);
    // Replay takes every verdict from the history: no rule is evaluated again.
    await expect(Worker.runReplayHistory({ workflowBundle }, history)).resolves.toBeUndefined();
    expect(evaluated).toHaveLength(3);
  });
});

describe('grants', () => {
  const GRANT = { forMs: 1_500, when: { properties: { to: { pattern: '@other\\.org$' }, subject: {}, body: {} } } };

  it('a grant given with an approval approves the next matching calls of that task and not of another, and expires in milliseconds', async () => {
    const { env } = environment;
    const { sent, list } = tools();
    const config = configWith([]);
    const policies = openSqlitePolicyStore(config.store.sqliteFile);
    const outcomes: Record<string, TurnState> = {};
    const first = await runTurn({
      tools: list,
      config,
      input: {
        taskId: 'task-g',
        prompt: 'x',
        model: scripted([
          { toolCalls: [sendTo('eve@other.org')] },
          { toolCalls: [sendTo('dan@other.org')] },
          { toolCalls: [sendTo('x@elsewhere.net')] },
          { text: 'done' },
        ]),
      },
      // The other turns run while this one waits for its third call: the server's clock moves only when the test moves it.
      interact: async (handle) => {
        await decide(handle, 0, 'approve', { grant: GRANT });
        await waitForState(handle, (state) => state.pendingApprovals.length > 0 && state.decisions.length === 2);
        const { taskQueue } = await handle.describe();
        const turn = async (name: string, taskId: string, to: string, verdict?: 'deny') => {
          const started = await env.client.workflow.start('agentTurn', {
            workflowId: `turn-${randomUUID()}`,
            taskQueue,
            args: [{ taskId, prompt: 'x', model: scripted([{ toolCalls: [sendTo(to)] }, { text: 'done' }]) }],
          });
          if (verdict) await decide(started, 0, verdict);
          outcomes[name] = await waitForState(started, (state) => state.status !== 'running');
        };
        await turn('same task', 'task-g', 'fay@other.org');
        await turn('other task', 'task-h', 'fay@other.org', 'deny');
        await turn('same task, other domain', 'task-g', 'fay@elsewhere.net', 'deny');
        // 1.5 s of the server's time after the grant, it approves nothing more.
        const [grant] = await policies.listGrants({ at: 0, all: true });
        await env.sleep(Date.parse(grant.expiresAt) - (await env.currentTimeMs()));
        await turn('same task, expired', 'task-g', 'gus@other.org', 'deny');
        await decide(handle, 2, 'deny');
      },
    });
    const grantId = first.state.decisions[0].grantId!;
    expect(grantId).toMatch(/^g-[0-9a-f]{16}$/);
    expect(byWhom(first.result)).toEqual(['approve alice', `approve grant:${grantId}`, 'deny alice']);
    const [grant] = await policies.listGrants({ at: 0, all: true });
    await policies.close();
    expect(Date.parse(grant.expiresAt) - Date.parse(grant.grantedAt)).toBe(1_500);
    expect(grant).toMatchObject({ id: grantId, tool: 'send_message', scope: 'task', scopeKey: 'task:task-g', grantedBy: 'alice', uses: 2 });
    const decidedBy = (name: string) => outcomes[name].toolCalls.map((event) => event.approval?.by);
    expect(decidedBy('same task')).toEqual([`grant:${grantId}`]);
    expect(decidedBy('other task')).toEqual(['alice']);
    expect(decidedBy('same task, other domain')).toEqual(['alice']);
    expect(decidedBy('same task, expired')).toEqual(['alice']);
    expect(sent.map(({ to }) => to)).toEqual(['eve@other.org', 'dan@other.org', 'fay@other.org']);
  });

  it('a revoked grant approves nothing more in a turn already running', async () => {
    const { sent, paid, list } = tools();
    const config = configWith([]);
    const policies = openSqlitePolicyStore(config.store.sqliteFile);
    const { result } = await runTurn({
      tools: list,
      config,
      input: {
        taskId: 'task-r',
        prompt: 'x',
        model: scripted([
          { toolCalls: [sendTo('eve@other.org')] },
          { toolCalls: [sendTo('dan@other.org')] },
          { toolCalls: [pay('INV-9')] },
          { toolCalls: [sendTo('fay@other.org')] },
          { text: 'done' },
        ]),
      },
      interact: async (handle) => {
        await decide(handle, 0, 'approve', { grant: { ...GRANT, forMs: 3_600_000 } });
        // While the payment waits, the grant is revoked; the same turn's next send is asked for.
        const waiting = await waitForState(handle, (state) => state.pendingApprovals.some((pending) => pending.tool === 'pay_invoice'));
        const revoked = await policies.revokeGrant(waiting.decisions[0].grantId!, 'carol', Date.now());
        expect(revoked?.uses).toBe(1);
        await decide(handle, 2, 'approve');
        await decide(handle, 3, 'deny');
      },
    });
    await policies.close();
    const grantId = result.toolCalls[1].approval!.by.slice('grant:'.length);
    expect(byWhom(result)).toEqual(['approve alice', `approve grant:${grantId}`, 'approve alice', 'deny alice']);
    expect(sent.map(({ to }) => to)).toEqual(['eve@other.org', 'dan@other.org']);
    expect(paid).toEqual(['INV-9']);
  });

  it('a grant scoped to a conversation approves the same call in its next turn', async () => {
    const { env, workflowBundle } = environment;
    const { sent, list } = tools();
    const taskQueue = `conversation-grant-${randomUUID()}`;
    const base = configWith([]);
    const config = { ...base, temporal: { ...base.temporal, taskQueue } };
    const store = openSqliteStore(config.store.sqliteFile);
    const worker = await createWorker({
      config,
      connection: env.nativeConnection,
      workflowBundle,
      activities: createActivities({ config, tools: list, store }),
    });
    const conversationId = `conversation-${randomUUID()}`;
    const turns = await worker.runUntil(async () => {
      const conversation = await env.client.workflow.start('conversation', {
        workflowId: conversationId,
        taskQueue,
        args: [{ conversationId, model: scripted([{ toolCalls: [sendTo('eve@other.org')] }, { text: 'sent' }]) }],
      });
      const first = conversation.executeUpdate(sendUpdate, { args: [{ text: 'tell eve' }] });
      const turn = env.client.workflow.getHandle(`${conversationId}-turn-1`);
      await until(
        () => turn.query(stateQuery).catch(() => undefined),
        (state) => (state?.pendingApprovals.length ?? 0) > 0,
      );
      await decide(turn, 0, 'approve', { grant: { forMs: 3_600_000, scope: 'conversation' } });
      const results = [(await first) as AgentTurnResult];
      results.push((await conversation.executeUpdate(sendUpdate, { args: [{ text: 'tell eve again' }] })) as AgentTurnResult);
      await conversation.signal(closeConversationSignal);
      return results;
    });
    await store.close();
    const grantId = turns[1].toolCalls[0].approval?.by.slice('grant:'.length);
    expect(byWhom(turns[0])).toEqual(['approve alice']);
    expect(byWhom(turns[1])).toEqual([`approve grant:${grantId}`]);
    // The same arguments in the same conversation are the same intent: the second turn is answered from the first's receipt.
    expect(turns.map((result) => result.toolCalls[0].executions)).toEqual([1, 0]);
    expect(sent).toEqual([{ to: 'eve@other.org' }]);
    const policies = openSqlitePolicyStore(config.store.sqliteFile);
    expect(await policies.listGrants({ at: 0, all: true })).toEqual([
      expect.objectContaining({ id: grantId, scope: 'conversation', scopeKey: `conversation:${conversationId}`, uses: 1 }),
    ]);
    await policies.close();
  });

  it('a person cannot pass as a rule or a grant, nor grant with a denial', async () => {
    const { list } = tools();
    const rejected: string[] = [];
    await runTurn({
      tools: list,
      config: configWith([]),
      input: { prompt: 'x', model: scripted([{ toolCalls: [sendTo('eve@other.org')] }, { text: 'done' }]) },
      interact: async (handle) => {
        const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
        const [pending] = state.pendingApprovals;
        const base = { callId: pending.callId, argsDigest: pending.argsDigest };
        for (const decision of [
          { ...base, decision: 'approve', approver: 'rule:routine-sends' },
          { ...base, decision: 'approve', approver: 'grant:g-0000000000000000' },
          { ...base, decision: 'deny', grant: GRANT },
          { ...base, decision: 'approve', grant: { forMs: 31 * 24 * 3_600_000 } },
        ]) {
          await handle
            .executeUpdate(decideUpdate, { args: [decision as never] })
            .catch((error: Error) => rejected.push((error.cause as Error | undefined)?.message ?? error.message));
        }
        await decide(handle, 0, 'deny');
      },
    });
    expect(rejected).toEqual([
      expect.stringMatching(/names starting rule: or grant: are kept/),
      expect.stringMatching(/names starting rule: or grant: are kept/),
      'a grant goes only with an approval',
      expect.stringMatching(/grant\.forMs must be/),
    ]);
  });
});
