import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateClient } from '../../client/tollgate-client';
import { approverSigningKeyFromEnvironment, generateApproverKeyPair, parseApproverSigningKey } from '../../common/approver-keys';
import { resumeSigningSubject, signDecisionFields } from '../../common/signed-decision';
import type { ResumeDecision } from '../../common/contract/decisions';
import { resumeSignal, resumeUpdate } from '../../workflows/messages';
import { openaiStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { testConfig } from '../helpers/test-config';
import { useTimeSkippingEnvironment, useTurnRunner, waitForState } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const runTurn = useTurnRunner(environment);
const PUBLIC_KEYS_ENV = 'TOLLGATE_RESUME_DECISIONS_TEST_PUBLIC_KEYS';
const PRIVATE_KEY_ENV = 'TOLLGATE_RESUME_DECISIONS_TEST_PRIVATE_KEY';
const alice = generateApproverKeyPair('alice');
process.env[PUBLIC_KEYS_ENV] = alice.publicEntry;
const serverNow = () => environment.env.currentTimeMs();
let provider: FakeProvider;

beforeAll(async () => {
  provider = await startFakeProvider();
});

afterAll(async () => {
  await provider.close();
});

/** A stream that breaks after its three text chunks went out. */
const brokenStream = () => ({ kind: 'stream', events: openaiStream.text(['one ', 'two ', 'three ', 'four']), resetAfter: 4 }) as const;

describe('resume decisions, when the worker has approver keys', () => {
  it('takes only a signed resume made for the wait open now: unsigned, replayed and re-rounded ones ask the model nothing', async () => {
    const config = testConfig({
      retry: { initialInterval: '100ms', maximumInterval: '1s' },
      approvals: { publicKeysEnv: PUBLIC_KEYS_ENV, privateKeyEnv: PRIVATE_KEY_ENV },
      model: { default: 'gpt', models: { gpt: { provider: 'openai', model: 'gpt-test', baseURL: provider.baseURL } } },
    });
    const before = provider.requests.length;
    provider.enqueue(brokenStream(), brokenStream(), { kind: 'stream', events: openaiStream.text(['Asked ', 'again.']) });
    const whys: string[] = [];
    let requestsWhileRefused = -1;
    const { result, state } = await runTurn({
      config,
      modelEnvironment: { env: { OPENAI_API_KEY: 'sk-test-openai-key' } },
      input: { prompt: 'Tell me.' },
      interact: async (handle) => {
        const key = approverSigningKeyFromEnvironment(PRIVATE_KEY_ENV, { [PRIVATE_KEY_ENV]: alice.privateEntry });
        const client = new TollgateClient(environment.env.client, config, undefined, key, serverNow);
        const first = await waitForState(handle, (current) => current.pendingResume !== undefined);
        const { step } = first.pendingResume!;
        expect(first.pendingResume!.round).toBe(1);
        const refused = async (decision: ResumeDecision) => {
          const error = await handle.executeUpdate(resumeUpdate, { args: [decision] }).catch((failure: unknown) => failure);
          expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
          whys.push(String((error as WorkflowUpdateFailedError).cause?.message));
        };
        await refused({ step, decision: 'retry', by: 'mallory' });
        // Alice retries round 1, signed by hand as any client holding her key signs it.
        const { keyId, privateKey } = parseApproverSigningKey(alice.privateEntry, 'test key');
        const signedAt = new Date(await serverNow()).toISOString();
        const fields = {
          ...resumeSigningSubject(step),
          decision: 'retry' as const,
          approver: keyId,
          signedAt,
          workflowId: handle.workflowId,
        };
        const retry: ResumeDecision = { step, decision: 'retry', keyId, signedAt, signature: signDecisionFields(fields, privateKey) };
        await handle.signal(resumeSignal, retry);
        // The retried stream breaks again: round 2 of the same step.
        const second = await waitForState(handle, (current) => current.pendingResume?.round === 2);
        expect(second.pendingResume!.step).toBe(step);
        await handle.signal(resumeSignal, retry);
        await refused(retry);
        await refused({ ...retry, round: 2 });
        await waitForState(handle, (current) => current.rejectedDecisions.length === 1);
        requestsWhileRefused = provider.requests.length - before;
        await client.resume(handle.workflowId, { step, decision: 'retry' });
      },
    });
    expect(whys[0]).toMatch(/^the decision is unsigned/);
    expect(whys[1]).toMatch(/^this signed decision was already taken once in this turn \(step \d+\)$/);
    expect(whys[2]).toMatch(/^this signed decision was already taken once in this turn/);
    expect(state.rejectedDecisions.map((entry) => entry.why)).toEqual([expect.stringMatching(/^this signed decision was already taken/)]);
    expect(requestsWhileRefused).toBe(2);
    expect(provider.requests.length - before).toBe(3);
    expect(result.status).toBe('completed');
    expect(result.answer).toBe('Asked again.');
    expect(state.modelInterruptions.map((entry) => entry.by)).toEqual(['alice', 'alice']);
  });
});
