import { createHash } from 'node:crypto';
import type { PolicyInput, PolicyVerdict, RecordGrantInput, RecordGrantResult } from '../common/activity-types';
import { grantRequestProblem } from '../common/grant-request';
import { atPointer, compileCondition, type CompiledRule, type Condition } from './approval-rules';
import type { PolicyStore, UseRequest } from './policy-store';

// The `decideByPolicy` and `recordGrant` local activities. A turn asks `decideByPolicy` once per
// irreversible call, before anyone is asked; the verdict is recorded in its history (replay never
// asks again), and the rules are the worker's as they are when the call is decided, so a rule
// changed after a turn started applies to the turn's next call.

/** How many grants' compiled conditions a worker keeps. */
const MAX_CACHED_CONDITIONS = 1_000;

/** What the policy activities decide with. */
export interface PolicyDependencies {
  rules: CompiledRule[];
  /** The rules of a turn's agent, matched before the worker's (none for an agent without rules). */
  agentRules?: (agent: string) => CompiledRule[];
  /** The store of caps and grants, opened on first use. */
  store: () => PolicyStore;
}

/** The key a grant's scope is stored under: a task or a conversation, never mistaken for each other. */
export function scopeKey(scope: 'task' | 'conversation', id: string): string {
  return `${scope}:${id}`;
}

/** A grant's id: the same for the same approval, so recording it again (a retried activity) records nothing new. */
export function grantId(workflowId: string, callId: string, round: number): string {
  return `g-${createHash('sha256').update(`${workflowId}\n${callId}\n${round}`).digest('hex').slice(0, 16)}`;
}

/** The value of a rule's amount argument, or why the call gives none a cap can count. */
function amountOf(rule: CompiledRule, args: unknown): { amount?: number; why?: string } {
  if (!rule.amountPointer) return {};
  const value = atPointer(args, rule.amountPointer);
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return { amount: value };
  return { why: `rule ${rule.name} caps the total of ${rule.amountPointer}, and this call gives no number of at least 0 there` };
}

export function createDecideByPolicy({ rules: workerRules, agentRules, store }: PolicyDependencies) {
  /** Grant conditions, compiled once per grant (a grant's condition never changes). */
  const conditions = new Map<string, Condition | Error>();
  const conditionOf = (id: string, when: Record<string, unknown>) => {
    let compiled = conditions.get(id);
    if (!compiled) {
      try {
        compiled = compileCondition(when, `grant ${id}.when`, true);
      } catch (error) {
        compiled = error as Error;
      }
      // Grants come and go while a worker runs: only the newest conditions are kept.
      if (conditions.size >= MAX_CACHED_CONDITIONS) conditions.delete(conditions.keys().next().value!);
      conditions.set(id, compiled);
    }
    return compiled;
  };

  return async function decideByPolicy(input: PolicyInput): Promise<PolicyVerdict> {
    const { tool, args, argsDigest } = input;
    const rules = input.agent && agentRules ? [...agentRules(input.agent), ...workerRules] : workerRules;
    // What a person denied is never approved by a rule or a grant; a deny rule may still deny it.
    const deniedByPerson = input.deniedDigests.includes(argsDigest);
    const use: Omit<UseRequest, 'amount'> = { workflowId: input.workflowId, callId: input.callId, taskId: input.taskId, at: input.at };
    const notes: string[] = [];
    let asking: string | undefined;
    for (const rule of rules) {
      const outcome = rule.evaluate(tool, args);
      // A rule that cannot tell whether these arguments match (past its work budget) might have denied them: a person decides.
      if ('unevaluable' in outcome)
        return {
          decision: 'ask',
          note: `rule ${rule.name} cannot be evaluated for these arguments (${outcome.unevaluable}); a person decides`,
        };
      if (!outcome.matches) continue;
      const by = `rule:${rule.name}`;
      if (rule.decision === 'deny') return { decision: 'deny', via: 'rule', by, argsDigest, reason: rule.reason };
      if (rule.decision === 'ask') {
        asking = rule.name;
        break;
      }
      if (deniedByPerson) break;
      const { amount, why } = amountOf(rule, args);
      if (why) {
        notes.push(why);
        break;
      }
      const used = await store().useRule(rule, { ...use, ...(amount !== undefined ? { amount } : {}) });
      if (used.taken) return { decision: 'approve', via: 'rule', by, argsDigest };
      notes.push(used.why);
      break;
    }
    if (deniedByPerson)
      return { decision: 'ask', note: 'a person denied these arguments in this turn; no rule or grant approves them again' };
    // A grant is a person's word given ahead: it may approve what a rule leaves to a person.
    const scopeKeys = [scopeKey('task', input.taskId), ...(input.conversationId ? [scopeKey('conversation', input.conversationId)] : [])];
    for (const grant of await store().activeGrants({ tool, scopeKeys, at: input.at })) {
      if (grant.when !== undefined) {
        const condition = conditionOf(grant.id, grant.when);
        if (condition instanceof Error) continue;
        const outcome = condition(args);
        if ('unevaluable' in outcome) {
          notes.push(`grant ${grant.id} cannot be evaluated for these arguments (${outcome.unevaluable})`);
          continue;
        }
        if (!outcome.matches) continue;
      }
      const used = await store().useGrant(grant.id, use);
      if (used.taken) return { decision: 'approve', via: 'grant', by: `grant:${grant.id}`, argsDigest };
      notes.push(used.why);
    }
    return { decision: 'ask', ...(notes.length > 0 ? { note: notes.join('; ') } : {}), ...(asking ? { rule: asking } : {}) };
  };
}

export function createRecordGrant({ store }: Pick<PolicyDependencies, 'store'>) {
  return async function recordGrant(input: RecordGrantInput): Promise<RecordGrantResult> {
    const { grant } = input;
    const problem = grantRequestProblem(grant);
    if (problem) return { recorded: false, why: problem };
    const scope = grant.scope ?? 'task';
    if (scope === 'conversation' && !input.conversationId) {
      return { recorded: false, why: 'grant.scope is "conversation", and this turn is not one of a conversation' };
    }
    const id = grantId(input.workflowId, input.callId, input.round);
    if (grant.when !== undefined) {
      try {
        compileCondition(grant.when, 'grant.when', true);
      } catch (error) {
        return { recorded: false, why: (error as Error).message };
      }
    }
    const recorded = await store().addGrant({
      id,
      tool: input.tool,
      ...(grant.when !== undefined ? { when: grant.when } : {}),
      scope,
      scopeKey: scopeKey(scope, scope === 'task' ? input.taskId : input.conversationId!),
      taskId: input.taskId,
      workflowId: input.workflowId,
      callId: input.callId,
      grantedBy: input.grantedBy,
      grantedAtMs: input.at,
      expiresAtMs: input.at + grant.forMs,
      ...(grant.maxCalls !== undefined ? { maxCalls: grant.maxCalls } : {}),
      ...(input.keyId ? { keyId: input.keyId } : {}),
      ...(input.signature ? { signature: input.signature } : {}),
    });
    return { recorded: true, grant: recorded };
  };
}
