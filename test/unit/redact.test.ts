import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { CIRCULAR, createRedactor, redactorForConfig, redactValue, workerSecrets } from '../../hardened/redact';
import { canonicalJson } from '../../common/canonical-json';
import { redactFailure } from '../../hardened/redact-failure';
import { deepObject } from '../helpers/schema-probes';
import { testConfig } from '../helpers/test-config';

const ENV = {
  LEAK_MODEL_KEY: 'mk_9a8b7c6d5e4f3a2b1c0d',
  TOLLGATE_POSTGRES_URL: 'postgresql://tollgate:pg-pass-7f3e9a1b@db.internal:5432/tollgate',
  LEAK_KEYRING: 'k1:QUJDREVGR0hJSktMTU5PUA==,k0:b2xkLWtleS1ieXRlcy0xMjM0',
  LEAK_CODEC_TOKEN: 'codec-token-5d4c3b2a19',
  LEAK_HEADER_TOKEN: 'Bearer mcp-token-abcdef0123',
  SHORT_KEY: 'abc',
};

const config = testConfig({
  model: {
    default: 'm',
    models: {
      m: { provider: 'openai', model: 'x', apiKeyEnv: 'LEAK_MODEL_KEY' },
      s: { provider: 'openai', model: 'x', apiKeyEnv: 'SHORT_KEY' },
    },
  },
  encryption: { keysEnv: 'LEAK_KEYRING', codecServer: { tokenEnv: 'LEAK_CODEC_TOKEN' } },
  mcp: { servers: { files: { url: 'http://127.0.0.1:1/mcp', headersFromEnv: { Authorization: 'LEAK_HEADER_TOKEN' } } } },
  telemetry: { otlp: { endpoint: 'http://127.0.0.1:4318/v1/traces', headers: { 'x-api-key': 'otlp-header-secret-42' } } },
});

describe('the worker secrets a redactor finds by value', () => {
  it('takes every variable the config names, and the secret parts of their values', () => {
    const secrets = workerSecrets(config, ENV);
    for (const value of [
      ENV.LEAK_MODEL_KEY,
      ENV.TOLLGATE_POSTGRES_URL,
      'pg-pass-7f3e9a1b',
      'QUJDREVGR0hJSktMTU5PUA==',
      'b2xkLWtleS1ieXRlcy0xMjM0',
      ENV.LEAK_CODEC_TOKEN,
      'mcp-token-abcdef0123',
      'otlp-header-secret-42',
    ])
      expect(secrets).toContain(value);
  });

  it('replaces each of them wherever it appears, and leaves values too short to be secrets alone', () => {
    const redactor = redactorForConfig(config, ENV);
    const text = [
      `401: bad key ${ENV.LEAK_MODEL_KEY}`,
      'could not connect as tollgate:pg-pass-7f3e9a1b@db.internal',
      'key QUJDREVGR0hJSktMTU5PUA== refused',
      'token mcp-token-abcdef0123 expired, codec-token-5d4c3b2a19 too',
      'otlp-header-secret-42',
      'abc stays',
    ].join('\n');
    const redacted = redactor.text(text);
    for (const secret of workerSecrets(config, ENV).filter((value) => value.length >= 8)) expect(redacted).not.toContain(secret);
    expect(redacted).toContain('401: bad key [redacted]');
    expect(redacted).toContain('abc stays');
    // A secret with the characters of a regular expression is found as the literal it is.
    expect(createRedactor([], { secrets: ['a.b*c+d?(e)[f]'] }).text('x a.b*c+d?(e)[f] y aXbbbcd')).toBe('x [redacted] y aXbbbcd');
  });
});

describe('a failure as it leaves an activity', () => {
  const redactor = createRedactor(['cust-[0-9]{6}'], { secrets: ['mk_9a8b7c6d5e4f3a2b1c0d'] });

  it('keeps the type, retry flag and delay of an ApplicationFailure, with its message, details and stack redacted', () => {
    const failure = ApplicationFailure.create({
      type: 'model_unavailable',
      message: 'answered 503: key mk_9a8b7c6d5e4f3a2b1c0d for cust-123456',
      nonRetryable: false,
      nextRetryDelay: 1500,
      details: [{ text: 'partial cust-123456', chunks: 3 }],
    });
    const redacted = redactFailure(failure, redactor) as ApplicationFailure;
    expect(redacted).toBeInstanceOf(ApplicationFailure);
    expect(redacted).toMatchObject({ type: 'model_unavailable', nonRetryable: false, nextRetryDelay: 1500 });
    expect(redacted.message).toBe('answered 503: key [redacted] for [redacted]');
    expect(redacted.details).toEqual([{ text: 'partial [redacted]', chunks: 3 }]);
    expect(redacted.stack).not.toMatch(/mk_9a8b|cust-123456/);
  });

  it('turns any other error into a retryable failure of its name, redacted; a cancellation passes as it is', () => {
    const plain = new TypeError('bad answer: mk_9a8b7c6d5e4f3a2b1c0d');
    const redacted = redactFailure(plain, redactor) as ApplicationFailure;
    expect(redacted).toMatchObject({ type: 'TypeError', nonRetryable: false, message: 'bad answer: [redacted]' });
    expect(redacted.stack).not.toContain('mk_9a8b');
    const cancelled = new CancelledFailure('cancelled');
    expect(redactFailure(cancelled, redactor)).toBe(cancelled);
  });
});

describe('redaction of untrusted trees', () => {
  const SECRET = 'sk-deep0123456789abcdefgh';

  it('copies a value 100,000 levels deep with the secret at its bottom replaced, where a recursive walk overflowed its stack', () => {
    const deep = deepObject(100_000, { [SECRET]: SECRET });
    // Written by the iterative canonical writer: JSON.stringify overflows near 4,500 levels on Node.js 22.
    const text = canonicalJson(redactValue(deep));
    expect(text).not.toContain(SECRET);
    expect(text.endsWith('{"[redacted]":"[redacted]"}' + '}'.repeat(100_000))).toBe(true);
    const counted = createRedactor().value(deep);
    expect(counted.redactedValues).toBe(2);
    expect(canonicalJson(counted.value)).toBe(text);
  });

  it('gives what the recursive walk gave for ordinary values: keys and strings redacted, everything else as it is', () => {
    const value = { [SECRET]: [`Bearer abcdefghijkl`, 1, null, true, { x: 'ok', nested: [[SECRET]] }], n: 2, gone: undefined };
    expect(redactValue(value)).toEqual({ '[redacted]': ['[redacted]', 1, null, true, { x: 'ok', nested: [['[redacted]']] }], n: 2 });
    expect(redactValue(SECRET)).toBe('[redacted]');
    expect(redactValue(7)).toBe(7);
    expect(redactValue(null)).toBe(null);
  });

  it('marks a value that contains itself instead of walking it for ever; a shared value is copied at each place', () => {
    const loop: Record<string, unknown> = { name: SECRET };
    loop.self = loop;
    loop.list = [loop];
    expect(redactValue(loop)).toEqual({ name: '[redacted]', self: CIRCULAR, list: [CIRCULAR] });
    const shared = { a: SECRET };
    expect(redactValue({ one: shared, two: [shared] })).toEqual({ one: { a: '[redacted]' }, two: [{ a: '[redacted]' }] });
  });
});
