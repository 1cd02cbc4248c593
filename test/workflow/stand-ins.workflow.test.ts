import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { generateApproverKeyPair, parseApproverSigningKey } from '../../common/approver-keys';
import type { ApprovalDecision, PendingApproval } from '../../common/contract/decisions';
import { signDecisionFields } from '../../common/signed-decision';
import { signStandIn, type StandInStatement } from '../../common/stand-in';
import { addStandIn } from '../../policies/stand-in-file';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { decideUpdate } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

const PUBLIC_KEYS_ENV = 'TOLLGATE_STAND_INS_TEST_PUBLIC_KEYS';
const alice = generateApproverKeyPair('alice');
const bob = generateApproverKeyPair('bob');
const mallory = generateApproverKeyPair('mallory');
process.env[PUBLIC_KEYS_ENV] = [alice, bob, mallory].map((pair) => pair.publicEntry).join(',');

/** The time-skipping server's clock, which turns read. */
const serverNow = () => environment.env.currentTimeMs();
const HOUR = 3_600_000;

/** A statement by `by` (a private entry) naming `standIn` for the period, as `tollgate stand-in add` signs it. */
function statement(by: string, fields: { approver?: string; standIn: string; from: number; until: number }): StandInStatement {
  const { keyId, privateKey } = parseApproverSigningKey(by, 'test key');
  return signStandIn(
    {
      approver: fields.approver ?? keyId,
      standIn: fields.standIn,
      from: new Date(fields.from).toISOString(),
      until: new Date(fields.until).toISOString(),
    },
    privateKey,
  );
}

/** A decision signed by a private entry now, by the server's clock. */
async function signed(privateEntry: string, handle: WorkflowHandle, pending: PendingApproval): Promise<ApprovalDecision> {
  const { keyId, privateKey } = parseApproverSigningKey(privateEntry, 'test key');
  const signedAt = new Date(await serverNow()).toISOString();
  const fields = { callId: pending.callId, decision: 'approve' as const, argsDigest: pending.argsDigest, workflowId: handle.workflowId };
  return { ...fields, keyId, signedAt, signature: signDecisionFields({ ...fields, approver: keyId, signedAt }, privateKey) };
}

async function refusal(handle: WorkflowHandle, decision: ApprovalDecision): Promise<string | undefined> {
  try {
    await handle.executeUpdate(decideUpdate, { args: [decision] });
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
    return (error as WorkflowUpdateFailedError).cause?.message;
  }
}

describe('stand-ins', () => {
  it('a stand-in decides for the approver inside the period, and the decision names both', async () => {
    const now = await serverNow();
    const standInsFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-stand-ins-')), 'stand-ins.json');
    addStandIn(standInsFile, statement(alice.privateEntry, { standIn: 'bob', from: now - HOUR, until: now + HOUR }));
    const { result, state } = await standInTurn(standInsFile, async (handle, pending) => {
      expect(await refusal(handle, await signed(mallory.privateEntry, handle, pending))).toMatch(
        /^mallory may not decide on calls of send_message/,
      );
      expect(await refusal(handle, await signed(bob.privateEntry, handle, pending))).toBeUndefined();
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(state.decisions).toEqual([expect.objectContaining({ decision: 'approve', approver: 'bob', keyId: 'bob', for: 'alice' })]);
  });

  it('outside the period (not begun, or ended while the call waits) the stand-in is refused, and the approver still decides', async () => {
    const now = await serverNow();
    const standInsFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-stand-ins-')), 'stand-ins.json');
    addStandIn(standInsFile, statement(alice.privateEntry, { standIn: 'bob', from: now - HOUR, until: now + HOUR }));
    addStandIn(standInsFile, statement(alice.privateEntry, { standIn: 'mallory', from: now + 5 * HOUR, until: now + 6 * HOUR }));
    const { result, state } = await standInTurn(standInsFile, async (handle, pending) => {
      expect(await refusal(handle, await signed(mallory.privateEntry, handle, pending))).toMatch(/^mallory may not decide/);
      await environment.env.sleep('2 hours');
      expect(await refusal(handle, await signed(bob.privateEntry, handle, pending))).toMatch(
        /^bob may not decide on calls of send_message: only alice may/,
      );
      expect(await refusal(handle, await signed(alice.privateEntry, handle, pending))).toBeUndefined();
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(state.decisions).toEqual([expect.objectContaining({ approver: 'alice' })]);
    expect(state.decisions[0].for).toBeUndefined();
  });

  it('refuses statements not signed by the approver they name, altered after signing, or by someone who may not decide', async () => {
    const now = await serverNow();
    const standInsFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-stand-ins-')), 'stand-ins.json');
    // Mallory signs a statement in alice's name, alters one of alice's, and names bob herself.
    addStandIn(standInsFile, statement(mallory.privateEntry, { approver: 'alice', standIn: 'bob', from: now - HOUR, until: now + HOUR }));
    const genuine = statement(alice.privateEntry, { standIn: 'mallory', from: now - 3 * HOUR, until: now - 2 * HOUR + 1 });
    addStandIn(standInsFile, { ...genuine, until: new Date(now + HOUR).toISOString() }, now - 3 * HOUR);
    addStandIn(standInsFile, statement(mallory.privateEntry, { standIn: 'bob', from: now - HOUR, until: now + HOUR }));
    const { result } = await standInTurn(standInsFile, async (handle, pending) => {
      expect(await refusal(handle, await signed(bob.privateEntry, handle, pending))).toMatch(/^bob may not decide/);
      expect(await refusal(handle, await signed(mallory.privateEntry, handle, pending))).toMatch(/^mallory may not decide/);
      expect(await refusal(handle, await signed(alice.privateEntry, handle, pending))).toBeUndefined();
    });
    expect(result.toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
  });
});

/** A send_message turn that only alice may decide (approvals.groups), its stand-ins read from the file. */
function standInTurn(standInsFile: string, interact: (handle: WorkflowHandle, pending: PendingApproval) => Promise<void>) {
  const config = testConfig({ approvals: { publicKeysEnv: PUBLIC_KEYS_ENV, groups: { send_message: ['alice'] }, standInsFile } });
  return runTurn({
    config,
    tools: [sendMessageTool({ workspace: config.workspace })],
    input: {
      prompt: 'x',
      model: scripted([{ toolCalls: [{ tool: 'send_message', args: { to: 'ops', subject: 'Q3', body: 'Numbers.' } }] }, { text: 'done' }]),
      limits: { deadlineMs: 24 * HOUR },
    },
    interact: async (handle) => {
      const state = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
      await interact(handle, state.pendingApprovals[0]);
    },
  });
}
