import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import { approverSigningKeyFromEnvironment, generateApproverKeyPair, parseApproverSigningKey } from '../../common/approver-keys';
import { signDecisionFields, type SignedDecisionFields } from '../../common/signed-decision';
import type { ApprovalDecision } from '../../common/contract/decisions';
import type { TurnState } from '../../common/contract/turn';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { approvalSignal, decideUpdate } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

// The worker reads its approver keys from the variable its config names, once, when it starts.
const PUBLIC_KEYS_ENV = 'TOLLGATE_SIGNED_DECISIONS_TEST_PUBLIC_KEYS';
const PRIVATE_KEY_ENV = 'TOLLGATE_SIGNED_DECISIONS_TEST_PRIVATE_KEY';
const alice = generateApproverKeyPair('alice');
const bob = generateApproverKeyPair('bob');
process.env[PUBLIC_KEYS_ENV] = `${alice.publicEntry},${bob.publicEntry}`;
const operatorEnv = { [PRIVATE_KEY_ENV]: alice.privateEntry };

/** The time-skipping server's clock, which turns read: it runs ahead of this process's clock once time was skipped. */
const serverNow = () => environment.env.currentTimeMs();

/** A decision signed by hand, as another SDK would: the fields, then the signature over them; dated `offsetMs` from the server's now. */
async function signedBy(
  privateEntry: string,
  fields: Omit<SignedDecisionFields, 'approver' | 'signedAt'>,
  offsetMs = 0,
): Promise<ApprovalDecision> {
  const { keyId, privateKey } = parseApproverSigningKey(privateEntry, 'test key');
  const full: SignedDecisionFields = { ...fields, approver: keyId, signedAt: new Date((await serverNow()) + offsetMs).toISOString() };
  return {
    callId: full.callId,
    decision: full.decision,
    argsDigest: full.argsDigest,
    keyId,
    signedAt: full.signedAt,
    signature: signDecisionFields(full, privateKey),
  };
}

async function firstPending(handle: WorkflowHandle): Promise<{ callId: string; digest: string }> {
  const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
  return { callId: state.pendingApprovals[0].callId, digest: state.pendingApprovals[0].argsDigest };
}

async function rejectedUpdate(handle: WorkflowHandle, decision: ApprovalDecision): Promise<string> {
  const error = await handle.executeUpdate(decideUpdate, { args: [decision] }).catch((failure) => failure);
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
  return error.cause.message;
}

/** One send_message turn on a worker whose config names the approver keys (or not, with `signing: false`). */
function outboxTurn(interact: (handle: WorkflowHandle, client: TollgateClient) => Promise<void>, { signing = true } = {}) {
  const config = testConfig(signing ? { approvals: { publicKeysEnv: PUBLIC_KEYS_ENV, privateKeyEnv: PRIVATE_KEY_ENV } } : {});
  const send = sendMessageTool({ workspace: config.workspace });
  const outbox = path.join(config.workspace, 'outbox');
  const step = { toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Hello', body: 'The brief.' } }] };
  const delivered = () =>
    existsSync(outbox) ? readdirSync(outbox, { recursive: true }).filter((name) => String(name).endsWith('.json')).length : 0;
  return runTurn({
    config,
    tools: [send],
    input: { prompt: 'x', model: scripted([step, { text: 'done' }]) },
    interact: (handle) => {
      const signingKey = signing ? approverSigningKeyFromEnvironment(config.approvals.privateKeyEnv, operatorEnv) : undefined;
      return interact(handle, new TollgateClient(environment.env.client, config, undefined, signingKey, serverNow));
    },
  }).then((run) => ({ ...run, delivered: delivered() }));
}

function whys(state: TurnState): string[] {
  return state.rejectedDecisions.map((rejected) => rejected.why);
}

describe('signed decisions, when the worker has approver keys', () => {
  it('rejects and records an unsigned decision (signal and update); the call does not run until a signed one comes', async () => {
    const { result, delivered, state } = await outboxTurn(async (handle, client) => {
      const { callId, digest } = await firstPending(handle);
      await handle.signal(approvalSignal, { callId, decision: 'approve', approver: 'alice', argsDigest: digest });
      expect(await rejectedUpdate(handle, { callId, decision: 'approve', argsDigest: digest })).toMatch(/^the decision is unsigned/);
      await waitForState(handle, (current) => current.rejectedDecisions.length === 1);
      expect((await handle.query('state')) as TurnState).toMatchObject({ decisions: [], pendingApprovals: [{ callId }] });
      await client.deny(handle.workflowId, callId, { argsDigest: digest, reason: 'not now' });
    });
    expect(whys(state)).toEqual([
      expect.stringMatching(/^the decision is unsigned: this worker takes only decisions signed by an approver key/),
    ]);
    expect(state.rejectedDecisions[0].decision).toMatchObject({ approver: 'alice', decision: 'approve' });
    expect(state.decisions).toEqual([expect.objectContaining({ decision: 'deny', approver: 'alice', keyId: 'alice', reason: 'not now' })]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'denied', executions: 0 })]);
    expect(delivered).toBe(0);
  });

  it('rejects a signature by an unknown key, a forged one under a known name, and an approver other than the key', async () => {
    const mallory = generateApproverKeyPair('mallory');
    const impostor = generateApproverKeyPair('alice');
    const { result, delivered, state } = await outboxTurn(async (handle, client) => {
      const { callId, digest } = await firstPending(handle);
      const fields = { callId, decision: 'approve' as const, argsDigest: digest, workflowId: handle.workflowId };
      await handle.signal(approvalSignal, await signedBy(mallory.privateEntry, fields));
      await handle.signal(approvalSignal, await signedBy(impostor.privateEntry, fields));
      await handle.signal(approvalSignal, { ...(await signedBy(alice.privateEntry, fields)), approver: 'root' });
      expect(await rejectedUpdate(handle, await signedBy(mallory.privateEntry, fields))).toMatch(/^keyId "mallory" is not an approver key/);
      await waitForState(handle, (current) => current.rejectedDecisions.length === 3);
      await client.deny(handle.workflowId, callId, { argsDigest: digest });
    });
    expect(whys(state)).toEqual([
      'keyId "mallory" is not an approver key of this worker (approvals.publicKeysEnv names alice, bob)',
      'signature does not verify with key "alice" over { callId, decision, argsDigest, approver, signedAt, workflowId } of this turn',
      'approver "root" differs from keyId "alice": a signed decision\'s approver is its key\'s name (leave it out or send the same)',
    ]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'denied', executions: 0 })]);
    expect(delivered).toBe(0);
  });

  it('rejects a valid signature made for another turn, for other arguments, or with signedAt too old or ahead', async () => {
    const { result, delivered, state } = await outboxTurn(async (handle, client) => {
      const { callId, digest } = await firstPending(handle);
      const fields = { callId, decision: 'approve' as const, argsDigest: digest, workflowId: handle.workflowId };
      const otherTurn = await signedBy(alice.privateEntry, { ...fields, workflowId: 'turn-another-one' });
      await handle.signal(approvalSignal, otherTurn);
      const otherArgs = await signedBy(alice.privateEntry, { ...fields, argsDigest: 'a'.repeat(64) });
      await handle.signal(approvalSignal, { ...otherArgs, argsDigest: digest });
      await handle.signal(approvalSignal, await signedBy(alice.privateEntry, fields, -30 * 60_000));
      await handle.signal(approvalSignal, await signedBy(alice.privateEntry, fields, 30 * 60_000));
      await handle.signal(approvalSignal, { ...(await signedBy(alice.privateEntry, fields)), signature: 'not base64!' });
      expect(await rejectedUpdate(handle, otherTurn)).toMatch(/^signature does not verify with key "alice"/);
      await waitForState(handle, (current) => current.rejectedDecisions.length === 5);
      await client.deny(handle.workflowId, callId, { argsDigest: digest });
    });
    expect(whys(state)).toEqual([
      expect.stringMatching(/^signature does not verify with key "alice"/),
      expect.stringMatching(/^signature does not verify with key "alice"/),
      expect.stringMatching(/^signedAt \S+ is 1[78]\d\d s old, older than approvals.signatureMaxAge \(600 s\)$/),
      expect.stringMatching(/^signedAt \S+ is 1[78]\d\d s ahead of the turn's clock \(at most 120 s\)$/),
      'signature must be base64 of the 64-byte Ed25519 signature',
    ]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'denied', executions: 0 })]);
    expect(delivered).toBe(0);
  });

  it('takes a decision TollgateClient signed with its configured key: runs the call once as the key name, and replays', async () => {
    let receipt: unknown;
    const { result, delivered, state, history } = await outboxTurn(async (handle, client) => {
      const { callId, digest } = await firstPending(handle);
      expect(client.signingKeyId).toBe('alice');
      await expect(client.approve(handle.workflowId, callId, { argsDigest: digest, approver: 'mallory' })).rejects.toThrow(
        /differs from the signing key "alice"/,
      );
      receipt = await client.approve(handle.workflowId, callId, { argsDigest: digest, reason: 'checked' });
    });
    expect(receipt).toEqual({ callId: 'call-0-0', decision: 'approve', accepted: true });
    expect(state.rejectedDecisions).toEqual([]);
    expect(state.decisions).toEqual([
      { callId: 'call-0-0', decision: 'approve', approver: 'alice', keyId: 'alice', reason: 'checked', signedAt: expect.any(String) },
    ]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'send_message', status: 'success', executions: 1 })]);
    expect(delivered).toBe(1);
    // Verification runs again on replay, by the recorded workflow clock, and decides the same.
    await expect(Worker.runReplayHistory({ workflowBundle: environment.workflowBundle }, history, 'signed-turn')).resolves.toBeUndefined();
  });

  it('takes a decision signed by hand and sent as the approval signal, by the second key', async () => {
    const { result, delivered, state } = await outboxTurn(async (handle) => {
      const { callId, digest } = await firstPending(handle);
      await handle.signal(
        approvalSignal,
        await signedBy(bob.privateEntry, { callId, decision: 'approve', argsDigest: digest, workflowId: handle.workflowId }),
      );
    });
    expect(state.decisions).toEqual([expect.objectContaining({ approver: 'bob', keyId: 'bob' })]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(delivered).toBe(1);
  });
});

describe('decisions when the worker has no approver keys', () => {
  it('takes an unsigned decision as before', async () => {
    const { result, delivered, state } = await outboxTurn(
      async (handle, client) => {
        const { callId, digest } = await firstPending(handle);
        expect(client.signingKeyId).toBeUndefined();
        await client.approve(handle.workflowId, callId, { argsDigest: digest, approver: 'developer' });
      },
      { signing: false },
    );
    expect(state.rejectedDecisions).toEqual([]);
    expect(state.decisions).toEqual([{ callId: 'call-0-0', decision: 'approve', approver: 'developer' }]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(delivered).toBe(1);
  });
});
