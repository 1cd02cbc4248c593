import { createPrivateKey, createPublicKey, randomBytes, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTurnSettings } from '../../activities/turn-settings';
import {
  approverPublicKeysFromEnvironment,
  approverSigningKeyFromEnvironment,
  generateApproverKeyPair,
  parseApproverPublicKeys,
  parseApproverSigningKey,
} from '../../common/approver-keys';
import {
  base64Bytes,
  bytesBase64,
  decisionSigningBytes,
  decisionSigningText,
  signatureProblem,
  signDecisionFields,
  type SignedDecisionFields,
} from '../../common/signed-decision';
import { canonicalJson } from '../../tools/canonical-json';
import { testConfig } from '../helpers/test-config';

const fields: SignedDecisionFields = {
  callId: 'call-0-0',
  decision: 'approve',
  argsDigest: 'ab'.repeat(32),
  approver: 'alice',
  signedAt: '2026-01-01T12:00:00.000Z',
  workflowId: 'turn-"quoted"-é-✓',
};

/** Node's own key objects for a `name:base64` pair, to check against an independent Ed25519. */
function nodeKeys(pair: { publicEntry: string; privateEntry: string }) {
  const raw = (entry: string) => Buffer.from(entry.slice(entry.indexOf(':') + 1), 'base64').toString('base64url');
  const x = raw(pair.publicEntry);
  return {
    publicKey: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' }),
    privateKey: createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x, d: raw(pair.privateEntry) }, format: 'jwk' }),
  };
}

describe('the signed text of a decision', () => {
  it('is the canonical JSON of the six fields, in UTF-8', () => {
    expect(decisionSigningText(fields)).toBe(canonicalJson(fields));
    expect(decisionSigningText(fields)).toBe(
      '{"approver":"alice","argsDigest":"' +
        'ab'.repeat(32) +
        '","callId":"call-0-0","decision":"approve","signedAt":"2026-01-01T12:00:00.000Z","workflowId":"turn-\\"quoted\\"-é-✓"}',
    );
    expect(Buffer.from(decisionSigningBytes(fields)).equals(Buffer.from(decisionSigningText(fields), 'utf8'))).toBe(true);
  });

  it('is signed and verified the same way by node:crypto: a signature from either verifies with the other', () => {
    const pair = generateApproverKeyPair('alice');
    const { publicKey, privateKey } = nodeKeys(pair);
    const ours = signDecisionFields(fields, parseApproverSigningKey(pair.privateEntry, 'key').privateKey);
    expect(verify(null, decisionSigningBytes(fields), publicKey, Buffer.from(ours, 'base64'))).toBe(true);

    const theirs = sign(null, Buffer.from(decisionSigningText(fields), 'utf8'), privateKey).toString('base64');
    expect(theirs).toBe(ours); // Ed25519 signatures are deterministic.
    const check = {
      publicKeys: parseApproverPublicKeys(pair.publicEntry, 'keys'),
      workflowId: fields.workflowId,
      now: Date.parse(fields.signedAt),
      maxAgeMs: 60_000,
    };
    const sent = {
      callId: fields.callId,
      decision: fields.decision,
      argsDigest: fields.argsDigest,
      keyId: 'alice',
      signedAt: fields.signedAt,
      signature: theirs,
    };
    expect(signatureProblem(sent, check)).toBeUndefined();
    expect(signatureProblem({ ...sent, decision: 'deny' }, check)).toMatch(/^signature does not verify with key "alice"/);
    expect(signatureProblem({ ...sent, signedAt: '2026-01-01 12:00' }, check)).toBe(
      'signedAt must be an ISO 8601 UTC time such as 2026-01-01T12:00:00.000Z',
    );
    expect(signatureProblem({ ...sent, keyId: 42 }, check)).toBe('keyId must name the approver key that signed the decision');
    expect(signatureProblem({ ...sent, signature: Buffer.alloc(63).toString('base64') }, check)).toBe(
      'signature must be base64 of the 64-byte Ed25519 signature',
    );
  });

  it('reads and writes base64 as Buffer does, and refuses what is not padded base64', () => {
    for (let length = 0; length < 70; length++) {
      const bytes = randomBytes(length);
      expect(bytesBase64(bytes)).toBe(bytes.toString('base64'));
      expect(Buffer.from(base64Bytes(bytes.toString('base64'))!).equals(bytes)).toBe(true);
    }
    for (const bad of ['abc', 'ab=c', 'a===', 'ab cd', '_-__', 'YQ']) expect(base64Bytes(bad), bad).toBeUndefined();
  });

  it('refuses every other spelling of a signature: the unused low bits of its last character must be zero', () => {
    const pair = generateApproverKeyPair('alice');
    const fields: SignedDecisionFields = {
      callId: 'call-0-0',
      decision: 'approve',
      argsDigest: 'a'.repeat(64),
      approver: 'alice',
      signedAt: '2026-01-01T12:00:00.000Z',
      workflowId: 'turn-1',
    };
    const signature = signDecisionFields(fields, parseApproverSigningKey(pair.privateEntry, 'key').privateKey);
    const check = {
      publicKeys: parseApproverPublicKeys(pair.publicEntry, 'keys'),
      workflowId: 'turn-1',
      now: Date.parse(fields.signedAt),
      maxAgeMs: 60_000,
    };
    const sent = {
      callId: fields.callId,
      decision: fields.decision,
      argsDigest: fields.argsDigest,
      keyId: 'alice',
      signedAt: fields.signedAt,
    };
    expect(signatureProblem({ ...sent, signature }, check)).toBeUndefined();
    // 64 bytes are 86 characters and '==': the last character carries 2 bits, so 15 other characters decode alike loosely.
    const last = signature.length - 3;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const variants = [...alphabet]
      .filter((char) => char !== signature[last])
      .map((char) => signature.slice(0, last) + char + signature.slice(last + 1))
      .filter((variant) => Buffer.from(variant, 'base64').equals(Buffer.from(signature, 'base64')));
    expect(variants).toHaveLength(15);
    for (const variant of variants) {
      expect(base64Bytes(variant), variant).toBeUndefined();
      expect(signatureProblem({ ...sent, signature: variant }, check)).toBe('signature must be base64 of the 64-byte Ed25519 signature');
    }
  });

  it('signs the round of a wait from the second on, so that a signature for one wait never verifies for another', () => {
    const base: SignedDecisionFields = {
      callId: 'call-0-0',
      decision: 'approve',
      argsDigest: 'b'.repeat(64),
      approver: 'alice',
      signedAt: '2026-01-01T12:00:00.000Z',
      workflowId: 'turn-1',
    };
    expect(decisionSigningText({ ...base, round: 1 })).toBe(decisionSigningText(base));
    expect(decisionSigningText({ ...base, round: 2 })).toBe(
      `{"approver":"alice","argsDigest":"${'b'.repeat(64)}","callId":"call-0-0","decision":"approve","round":"2","signedAt":"2026-01-01T12:00:00.000Z","workflowId":"turn-1"}`,
    );
    const pair = generateApproverKeyPair('alice');
    const privateKey = parseApproverSigningKey(pair.privateEntry, 'key').privateKey;
    const check = {
      publicKeys: parseApproverPublicKeys(pair.publicEntry, 'keys'),
      workflowId: 'turn-1',
      now: Date.parse(base.signedAt),
      maxAgeMs: 60_000,
    };
    const sent = { callId: base.callId, decision: base.decision, argsDigest: base.argsDigest, keyId: 'alice', signedAt: base.signedAt };
    const firstRound = signDecisionFields(base, privateKey);
    const secondRound = signDecisionFields({ ...base, round: 2 }, privateKey);
    expect(signatureProblem({ ...sent, signature: firstRound }, check)).toBeUndefined();
    expect(signatureProblem({ ...sent, signature: firstRound, round: 2 }, check)).toMatch(/does not verify .* and round 2 of this turn$/);
    expect(signatureProblem({ ...sent, signature: secondRound, round: 2 }, check)).toBeUndefined();
    expect(signatureProblem({ ...sent, signature: secondRound, round: 3 }, check)).toMatch(/does not verify/);
    expect(signatureProblem({ ...sent, signature: secondRound }, check)).toMatch(/does not verify/);
  });
});

describe('approver keys', () => {
  it('names the variable, the entry and what is wrong with a bad key list', () => {
    const { publicEntry } = generateApproverKeyPair('alice');
    expect(() => parseApproverPublicKeys('alice', 'KEYS')).toThrow('KEYS: expected "name:base64publickey" entries, got "alice"');
    expect(() => parseApproverPublicKeys('alice:AAAA', 'KEYS')).toThrow(
      'KEYS: key "alice" is not base64 of a raw 32-byte Ed25519 public key (got 3 bytes)',
    );
    expect(() => parseApproverPublicKeys(`${publicEntry},${publicEntry}`, 'KEYS')).toThrow('KEYS: key name "alice" is given twice');
    expect(() => parseApproverPublicKeys(' , ', 'KEYS')).toThrow('KEYS: no key given');
    expect(() => parseApproverPublicKeys(`a b${publicEntry.slice(5)}`, 'KEYS')).toThrow('KEYS: key name "a b" may hold only letters');
    expect(() => parseApproverSigningKey(`${publicEntry},${publicEntry}`, 'KEY')).toThrow(
      'KEY: expected one "name:base64privatekey" entry, got 2',
    );
    expect(() => approverPublicKeysFromEnvironment('APPROVERS', {})).toThrow(
      'approvals.publicKeysEnv: the environment variable APPROVERS is not set',
    );
    expect(() => approverSigningKeyFromEnvironment('MY_KEY', {})).toThrow(
      'approvals.privateKeyEnv: the environment variable MY_KEY is not set',
    );
    expect(approverPublicKeysFromEnvironment(undefined, {})).toBeUndefined();
  });

  it('are read by the worker when it starts: a missing variable stops it, and a turn gets the keys and the age bound', async () => {
    const config = testConfig({ approvals: { publicKeysEnv: 'APPROVERS', signatureMaxAge: '5 minutes' } });
    expect(() => createTurnSettings(config, {})).toThrow('approvals.publicKeysEnv: the environment variable APPROVERS is not set');
    const { publicEntry } = generateApproverKeyPair('alice');
    const settings = await createTurnSettings(config, { APPROVERS: publicEntry })();
    expect(settings.approvals).toEqual({
      requireDigest: true,
      publicKeys: { alice: publicEntry.slice('alice:'.length) },
      signatureMaxAgeMs: 300_000,
      policies: true,
    });
    expect((await createTurnSettings(testConfig(), {})()).approvals).toEqual({ requireDigest: true, policies: true });
  });
});
