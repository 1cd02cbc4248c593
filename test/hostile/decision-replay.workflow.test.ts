import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TollgateClient } from '../../client/tollgate-client';
import { approverSigningKeyFromEnvironment, generateApproverKeyPair, parseApproverSigningKey } from '../../common/approver-keys';
import { signDecisionFields, type SignedVerdict } from '../../common/signed-decision';
import type { ApprovalDecision, ResolutionDecision } from '../../common/contract/decisions';
import type { TurnState } from '../../common/contract/turn';
import { defineTool } from '../../tools/define-tool';
import { approvalSignal, decideUpdate, resolveSignal, resolveUpdate } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

const PUBLIC_KEYS_ENV = 'TOLLGATE_DECISION_REPLAY_TEST_PUBLIC_KEYS';
const PRIVATE_KEY_ENV = 'TOLLGATE_DECISION_REPLAY_TEST_PRIVATE_KEY';
const alice = generateApproverKeyPair('alice');
process.env[PUBLIC_KEYS_ENV] = alice.publicEntry;
const serverNow = () => environment.env.currentTimeMs();
const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** An irreversible transfer that applies and is then cut off on every execution (no status check: a person must say). */
function transferTool() {
  const executions: unknown[] = [];
  const tool = defineTool({
    name: 'transfer',
    description: 'Transfers money.',
    input: z.strictObject({ to: z.string().describe('The account.'), amount: z.number().int().positive().describe('Cents.') }),
    effect: 'irreversible_write',
    handler: (args) => {
      executions.push(args);
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    },
  });
  return { tool, executions };
}

/** A decision signed by hand, as any client holding alice's key signs it: the fields, then the signature over them. */
async function signed(
  handle: WorkflowHandle,
  { callId, verdict, argsDigest }: { callId: string; verdict: SignedVerdict; argsDigest: string },
): Promise<{ keyId: string; signedAt: string; signature: string }> {
  const { keyId, privateKey } = parseApproverSigningKey(alice.privateEntry, 'test key');
  const signedAt = new Date(await serverNow()).toISOString();
  const fields = { callId, decision: verdict, argsDigest, approver: keyId, signedAt, workflowId: handle.workflowId };
  return { keyId, signedAt, signature: signDecisionFields(fields, privateKey) };
}

/** The other texts of a base64 signature that a loose decoder reads as the same bytes (its last character's unused bits set). */
function respellings(signature: string): string[] {
  const last = signature.replace(/=+$/, '').length - 1;
  return [...BASE64_ALPHABET]
    .filter((char) => char !== signature[last])
    .map((char) => signature.slice(0, last) + char + signature.slice(last + 1))
    .filter((text) => Buffer.from(text, 'base64').equals(Buffer.from(signature, 'base64')));
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.catch((failure: unknown) => failure);
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
  return String((error as WorkflowUpdateFailedError).cause?.message);
}

const rejectedCount = (state: TurnState) => state.rejectedDecisions.length + state.rejectedDecisionsDropped;

describe('a decision satisfies exactly one wait', () => {
  it('takes no replayed, respelled or re-rounded approval or resolution: one write runs only as often as people decided', async () => {
    const config = testConfig({
      approvals: { publicKeysEnv: PUBLIC_KEYS_ENV, privateKeyEnv: PRIVATE_KEY_ENV },
      outcomes: { onUnknown: 'ask' },
    });
    const transfer = transferTool();
    const step = { toolCalls: [{ tool: 'transfer', args: { to: 'ACC-1', amount: 2_000 } }] };
    const seen: Record<string, string[]> = {};
    const { result } = await runTurn({
      config,
      tools: [transfer.tool],
      input: { prompt: 'x', model: scripted([step, { text: 'done' }]) },
      interact: async (handle) => {
        const key = approverSigningKeyFromEnvironment(PRIVATE_KEY_ENV, { [PRIVATE_KEY_ENV]: alice.privateEntry });
        const client = new TollgateClient(environment.env.client, config, undefined, key, serverNow);
        // Round 1: alice approves (signed by hand, so that an attacker who saw it on the wire holds the same message).
        const first = await waitForState(handle, (state) => state.pendingApprovals.length > 0);
        const { callId, argsDigest } = first.pendingApprovals[0];
        expect(first.pendingApprovals[0].round).toBe(1);
        const approval: ApprovalDecision = {
          callId,
          decision: 'approve',
          argsDigest,
          ...(await signed(handle, { callId, verdict: 'approve', argsDigest })),
        };
        await handle.signal(approvalSignal, approval);
        // The write ran once and was cut off; alice says it did not take effect (signed), so the call waits for approval again.
        const unknown = await waitForState(handle, (state) => (state.pendingResolutions?.length ?? 0) > 0);
        expect(unknown.pendingResolutions![0].round).toBe(1);
        const resolution: ResolutionDecision = {
          callId,
          outcome: 'not_applied',
          argsDigest,
          ...(await signed(handle, { callId, verdict: 'not_applied', argsDigest })),
        };
        await handle.signal(resolveSignal, resolution);
        const second = await waitForState(handle, (state) => state.pendingApprovals.length > 0 && state.decisions.length === 1);
        expect(second.pendingApprovals[0].round).toBe(2);

        // The attacker replays round 1's approval: as it was, respelled, and claiming round 2.
        const before = rejectedCount(second);
        await handle.signal(approvalSignal, approval);
        seen.replayed = [await refusal(handle.executeUpdate(decideUpdate, { args: [approval] }))];
        const variants = respellings(approval.signature!);
        expect(variants).toHaveLength(15);
        for (const signature of variants) await handle.signal(approvalSignal, { ...approval, signature });
        seen.respelled = [await refusal(handle.executeUpdate(decideUpdate, { args: [{ ...approval, signature: variants[0] }] }))];
        seen.reRounded = [await refusal(handle.executeUpdate(decideUpdate, { args: [{ ...approval, round: 2 }] }))];
        const afterApprovals = await waitForState(handle, (state) => rejectedCount(state) === before + 1 + variants.length);
        seen.approvalSignals = afterApprovals.rejectedDecisions.slice(-(1 + variants.length)).map((entry) => entry.why);
        expect(afterApprovals.pendingApprovals).toEqual([expect.objectContaining({ callId, round: 2 })]);
        expect(transfer.executions).toHaveLength(1);

        // Alice approves round 2 through the client (which names the round and signs it); the write runs again and is cut off again.
        await client.approve(handle.workflowId, callId, { argsDigest });
        const again = await waitForState(handle, (state) => (state.pendingResolutions?.length ?? 0) > 0 && state.resolutions!.length === 1);
        expect(again.pendingResolutions![0].round).toBe(2);
        // The attacker replays round 1's resolution (not_applied would let it run a third time): as it was, and claiming round 2.
        await handle.signal(resolveSignal, resolution);
        seen.resolutionReplayed = [await refusal(handle.executeUpdate(resolveUpdate, { args: [resolution] }))];
        seen.resolutionReRounded = [await refusal(handle.executeUpdate(resolveUpdate, { args: [{ ...resolution, round: 2 }] }))];
        // The round-1 approval's signature cannot pass for a resolution either.
        seen.crossKind = [
          await refusal(handle.executeUpdate(resolveUpdate, { args: [{ ...resolution, signature: approval.signature, round: 2 }] })),
        ];
        expect(transfer.executions).toHaveLength(2);
        // Alice says the second run took effect.
        await client.resolve(handle.workflowId, callId, 'applied', { argsDigest, note: 'the bank shows one transfer' });
      },
    });
    expect(seen.replayed[0]).toBe(`this signed decision was already taken once in this turn (call ${result.toolCalls[0].callId})`);
    expect(seen.respelled[0]).toMatch(/^round is required|^signature must be base64/);
    expect(seen.reRounded[0]).toMatch(/^this signed decision was already taken once in this turn/);
    expect(seen.approvalSignals).toHaveLength(16);
    expect(seen.approvalSignals[0]).toMatch(/^this signed decision was already taken once in this turn/);
    for (const why of seen.approvalSignals.slice(1)) expect(why).toMatch(/^round is required/);
    expect(seen.resolutionReplayed[0]).toMatch(/^this signed decision was already taken once in this turn/);
    expect(seen.resolutionReRounded[0]).toMatch(/^this signed decision was already taken once in this turn/);
    expect(seen.crossKind[0]).toMatch(/^this signed decision was already taken once in this turn/);
    expect(transfer.executions).toHaveLength(2);
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'transfer', status: 'success', executions: 2 })]);
  });

  it('checks signatures strictly even where the round is right: a respelled new signature is refused, and a signature unseen before but made for round 1 does not verify in round 2', async () => {
    const config = testConfig({
      approvals: { publicKeysEnv: PUBLIC_KEYS_ENV, privateKeyEnv: PRIVATE_KEY_ENV },
      outcomes: { onUnknown: 'ask' },
    });
    const transfer = transferTool();
    const step = { toolCalls: [{ tool: 'transfer', args: { to: 'ACC-2', amount: 500 } }] };
    const seen: string[] = [];
    const { result } = await runTurn({
      config,
      tools: [transfer.tool],
      input: { prompt: 'x', model: scripted([step, { text: 'done' }]) },
      interact: async (handle) => {
        const key = approverSigningKeyFromEnvironment(PRIVATE_KEY_ENV, { [PRIVATE_KEY_ENV]: alice.privateEntry });
        const client = new TollgateClient(environment.env.client, config, undefined, key, serverNow);
        const first = await waitForState(handle, (state) => state.pendingApprovals.length > 0);
        const { callId, argsDigest } = first.pendingApprovals[0];
        // Alice signed round 1 twice (a double click); only the first reached the turn, the second an attacker kept.
        const kept: ApprovalDecision = {
          callId,
          decision: 'approve',
          argsDigest,
          ...(await signed(handle, { callId, verdict: 'approve', argsDigest })),
        };
        await environment.env.sleep(1_000);
        await client.approve(handle.workflowId, callId, { argsDigest });
        await waitForState(handle, (state) => (state.pendingResolutions?.length ?? 0) > 0);
        await client.resolve(handle.workflowId, callId, 'not_applied', { argsDigest });
        await waitForState(handle, (state) => state.pendingApprovals.length > 0 && state.decisions.length === 1);
        seen.push(await refusal(handle.executeUpdate(decideUpdate, { args: [kept] })));
        seen.push(await refusal(handle.executeUpdate(decideUpdate, { args: [{ ...kept, round: 2 }] })));
        seen.push(
          await refusal(handle.executeUpdate(decideUpdate, { args: [{ ...kept, round: 2, signature: respellings(kept.signature!)[3] }] })),
        );
        expect(transfer.executions).toHaveLength(1);
        await client.deny(handle.workflowId, callId, { argsDigest, reason: 'not twice' });
      },
    });
    expect(seen[0]).toMatch(/^round is required/);
    expect(seen[1]).toMatch(/^signature does not verify with key "alice" .* and round 2 of this turn$/);
    expect(seen[2]).toBe('signature must be base64 of the 64-byte Ed25519 signature');
    expect(transfer.executions).toHaveLength(1);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'transfer', status: 'denied', executions: 1 })]);
  });
});
