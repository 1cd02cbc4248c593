import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TollgateClient } from '../../client/tollgate-client';
import { approverSigningKeyFromEnvironment, generateApproverKeyPair, parseApproverSigningKey } from '../../common/approver-keys';
import { signDecisionFields } from '../../common/signed-decision';
import type { ResolutionDecision } from '../../common/contract/decisions';
import { argsDigest } from '../../tools/canonical-json';
import { defineTool } from '../../tools/define-tool';
import { decideUpdate, resolveUpdate } from '../../workflows/messages';
import { testConfig } from '../helpers/test-config';
import { scripted, useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);

const PUBLIC_KEYS_ENV = 'TOLLGATE_SIGNED_RESOLUTIONS_TEST_PUBLIC_KEYS';
const PRIVATE_KEY_ENV = 'TOLLGATE_SIGNED_RESOLUTIONS_TEST_PRIVATE_KEY';
const alice = generateApproverKeyPair('alice');
process.env[PUBLIC_KEYS_ENV] = alice.publicEntry;
const serverNow = () => environment.env.currentTimeMs();

/** An irreversible transfer whose first execution applies and is then cut off (no status check: a person must say). */
function transferTool() {
  const executions: unknown[] = [];
  const tool = defineTool({
    name: 'transfer',
    description: 'Transfers money.',
    input: z.strictObject({ to: z.string().describe('The account.'), amount: z.number().int().positive().describe('Cents.') }),
    effect: 'irreversible_write',
    handler: (args, { attempt }) => {
      executions.push(args);
      if (executions.length === 1 && attempt === 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      return { sent: true };
    },
  });
  return { tool, executions };
}

function signedTurn(interact: (handle: WorkflowHandle, client: TollgateClient) => Promise<void>) {
  const config = testConfig({ approvals: { publicKeysEnv: PUBLIC_KEYS_ENV, privateKeyEnv: PRIVATE_KEY_ENV } });
  const transfer = transferTool();
  const step = { toolCalls: [{ tool: 'transfer', args: { to: 'ACC-1', amount: 2_000 } }] };
  return runTurn({
    config,
    tools: [transfer.tool],
    input: { prompt: 'x', model: scripted([step, { text: 'done' }]) },
    interact: (handle) => {
      const key = approverSigningKeyFromEnvironment(PRIVATE_KEY_ENV, { [PRIVATE_KEY_ENV]: alice.privateEntry });
      return interact(handle, new TollgateClient(environment.env.client, config, undefined, key, serverNow));
    },
  }).then((run) => ({ ...run, executions: transfer.executions }));
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.catch((failure: unknown) => failure);
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
  return String((error as WorkflowUpdateFailedError).cause?.message);
}

describe('signed edits and resolutions, when the worker has approver keys', () => {
  it('takes a signed edit only when its signature covers the edited arguments, and a resolution only when signed', async () => {
    const edited = { to: 'ACC-1', amount: 200 };
    const { result, state, executions } = await signedTurn(async (handle, client) => {
      const waiting = await waitForState(handle, (current) => current.pendingApprovals.length > 0);
      const { callId, argsDigest: shown } = waiting.pendingApprovals[0];
      // A signature over the approval as shown, with edited arguments attached afterwards, does not count for them.
      const { keyId, privateKey } = parseApproverSigningKey(alice.privateEntry, 'test key');
      const signedAt = new Date(await serverNow()).toISOString();
      const plain = { callId, decision: 'approve' as const, argsDigest: shown, approver: keyId, signedAt, workflowId: handle.workflowId };
      const attached = { ...plain, keyId, signature: signDecisionFields(plain, privateKey), args: edited };
      expect(await refusal(handle.executeUpdate(decideUpdate, { args: [attached] }))).toMatch(/does not verify .* with editedArgsDigest/);
      const receipt = await client.approve(handle.workflowId, callId, { argsDigest: shown, args: edited });
      expect(receipt).toMatchObject({ accepted: true, editedDigest: argsDigest(edited) });

      const { pendingResolutions } = await waitForState(handle, (current) => (current.pendingResolutions?.length ?? 0) > 0);
      const pending = pendingResolutions![0];
      const unsigned: ResolutionDecision = { callId, outcome: 'applied', argsDigest: pending.argsDigest };
      expect(await refusal(handle.executeUpdate(resolveUpdate, { args: [unsigned] }))).toMatch(/^the decision is unsigned/);
      const resolved = await client.resolve(handle.workflowId, callId, 'applied', {
        argsDigest: pending.argsDigest,
        note: 'in the ledger',
      });
      expect(resolved).toEqual({ callId, outcome: 'applied', accepted: true });
    });
    // The edited call is the one that waited for the resolution: its digest, not the model's.
    expect(state.resolutions).toEqual([expect.objectContaining({ resolver: 'alice', keyId: 'alice', argsDigest: argsDigest(edited) })]);
    expect(executions).toEqual([edited]);
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ status: 'success', executions: 1, edit: expect.objectContaining({ editor: 'alice' }) }),
    ]);
  });
});
