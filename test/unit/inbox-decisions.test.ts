// The inbox page computes digests and signs decisions in the browser (client/inbox/public/decisions.js);
// the worker checks them with its own code. These tests hold the two to the same answers.
import { webcrypto, type webcrypto as WebCrypto } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decisionSigningText, signatureProblem } from '../../common/signed-decision';
import { approvalDigest, canonicalJson } from '../../tools/canonical-json';
import { checkDecisionRequest, DecisionRefused } from '../../client/inbox/forward-decision';
// @ts-expect-error: a browser module without type declarations, imported as the page imports it.
import * as page from '../../client/inbox/public/decisions.js';

const browser = page as {
  canonicalJson(value: unknown): string;
  approvalDigest(args: unknown, definitionDigest?: string): Promise<string>;
  decisionSigningText(fields: object): string;
  signDecision(fields: object, key: WebCrypto.CryptoKey): Promise<string>;
  publicEntry(name: string, key: WebCrypto.CryptoKey): Promise<string>;
};

describe("the inbox page's decisions module", () => {
  it('writes the canonical JSON and the approval digest the worker writes, for any JSON value', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: undefined }), async (value, definition) => {
        expect(browser.canonicalJson(value)).toBe(canonicalJson(value));
        expect(await browser.approvalDigest(value, definition)).toBe(approvalDigest(value, definition));
      }),
      { numRuns: 300 },
    );
  });

  it('signs the text the turn verifies: an approval, an edit in a second round, a resolution and a resume', async () => {
    const pair = (await webcrypto.subtle.generateKey('Ed25519', false, ['sign', 'verify'])) as WebCrypto.CryptoKeyPair;
    const entry = await browser.publicEntry('alice', pair.publicKey);
    const [, publicKey] = entry.split(':');
    const signedAt = new Date().toISOString();
    const cases = [
      { callId: 'call-0-0', decision: 'approve', argsDigest: 'a'.repeat(64), approver: 'alice', signedAt, workflowId: 'turn-1' },
      {
        callId: 'call-1-0',
        decision: 'approve',
        argsDigest: 'b'.repeat(64),
        approver: 'alice',
        signedAt,
        workflowId: 'turn-"1"',
        editedArgsDigest: 'c'.repeat(64),
        round: 2,
      },
      { callId: 'call-2-0', decision: 'not_applied', argsDigest: 'd'.repeat(64), approver: 'alice', signedAt, workflowId: 'turn-ü' },
      { callId: 'resume:3', decision: 'retry', argsDigest: '', approver: 'alice', signedAt, workflowId: 'turn-\n' },
    ] as const;
    for (const fields of cases) {
      expect(browser.decisionSigningText(fields)).toBe(decisionSigningText(fields));
      const signature = await browser.signDecision(fields, pair.privateKey);
      const check = { publicKeys: { alice: publicKey }, workflowId: fields.workflowId, now: Date.now(), maxAgeMs: 60_000 };
      expect(signatureProblem({ ...fields, keyId: 'alice', signature }, check)).toBeUndefined();
      // The same signature over another digest does not verify.
      expect(signatureProblem({ ...fields, argsDigest: 'e'.repeat(64), keyId: 'alice', signature }, check)).toMatch(/does not verify/);
    }
  });
});

describe('what the inbox forwards', () => {
  const approval = { callId: 'call-0-0', decision: 'approve', approver: 'alice', argsDigest: 'a'.repeat(64) };

  it('takes a decision of a known kind named for the approver signed in', () => {
    expect(checkDecisionRequest({ kind: 'approval', workflowId: 'turn-1', decision: approval }, 'alice')).toEqual({
      kind: 'approval',
      workflowId: 'turn-1',
      decision: approval,
    });
    const resume = { step: 2, decision: 'retry', by: 'alice', keyId: 'alice' };
    expect(checkDecisionRequest({ kind: 'resume', workflowId: 'turn-1', decision: resume }, 'alice').decision).toBe(resume);
  });

  it.each([
    ['no body', undefined, 'send { kind, workflowId, decision }'],
    ['an unknown kind', { kind: 'terminate', workflowId: 't', decision: approval }, 'kind must be "approval", "resolution" or "resume"'],
    ['an inherited kind', { kind: 'toString', workflowId: 't', decision: approval }, 'kind must be "approval", "resolution" or "resume"'],
    ['no workflow id', { kind: 'approval', decision: approval }, 'workflowId must name the turn decided on'],
    ['a decision that is a list', { kind: 'approval', workflowId: 't', decision: [] }, 'decision must be an object'],
    ['another approver', { kind: 'approval', workflowId: 't', decision: { ...approval, approver: 'mallory' } }, 'names its decider, alice'],
    [
      'no approver',
      { kind: 'resolution', workflowId: 't', decision: { callId: 'c', outcome: 'applied', argsDigest: 'x' } },
      'names its decider, alice',
    ],
    ['another key', { kind: 'approval', workflowId: 't', decision: { ...approval, keyId: 'mallory' } }, 'signed with the key "mallory"'],
  ])('refuses %s, with why', (_name, body, why) => {
    expect(() => checkDecisionRequest(body, 'alice')).toThrow(DecisionRefused);
    expect(() => checkDecisionRequest(body, 'alice')).toThrow(why);
  });
});
